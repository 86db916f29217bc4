from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tfop import yamlio
from tfop.config import ConfigError, load_config, parse_config
from tfop.controller.plan.controller_config import (
    Accelerator,
    CapacityScalingSettings,
    DisruptionSettings,
    HostVolume,
)

SEEDS = Path(__file__).resolve().parents[1] / "data" / "seeds"

SEEDS_AZURE = """
accelerators:
  nvidia.com/gpu:
    envVars:
      - name: LD_LIBRARY_PATH
        value: /usr/lib/nvidia:/usr/lib/x86_64-linux-gnu
    volumes:
      - name: lib
        mountPath: /usr/lib/nvidia
        hostPath:  /usr/lib/nvidia-384
      - name: libcuda
        mountPath: /usr/lib/x86_64-linux-gnu/libcuda.so.1
        hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.1
"""


def test_no_file_means_defaults() -> None:
    config = load_config(None)
    assert config.service_domain == "svc" and dict(config.accelerators) == {}


def test_the_seeds_accelerator_config_loads(tmp_path: Path) -> None:
    path = tmp_path / "controller_config_file.yaml"
    path.write_text("serviceDomain: svc.cluster.local\n" + SEEDS_AZURE)
    config = load_config(path)
    assert config.service_domain == "svc.cluster.local"
    assert dict(config.accelerators) == {"nvidia.com/gpu": Accelerator(
        env=(("LD_LIBRARY_PATH", "/usr/lib/nvidia:/usr/lib/x86_64-linux-gnu"),),
        volumes=(HostVolume("lib", "/usr/lib/nvidia", "/usr/lib/nvidia-384"),
                 HostVolume("libcuda", "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                            "/usr/lib/x86_64-linux-gnu/libcuda.so.1")))}


@pytest.mark.parametrize("naming", ["RuntimeId", "TypeIndex"])
def test_child_naming_for_new_jobs(naming: str) -> None:
    assert parse_config({"childNaming": naming}).child_naming == naming
    assert parse_config({}).child_naming == "RuntimeId"


@pytest.mark.parametrize("backend", ["pods", "jobs"])
def test_replica_backend_for_new_jobs(backend: str) -> None:
    assert parse_config({"replicaBackend": backend}).replica_backend == backend
    assert parse_config({}).replica_backend == "pods"


@pytest.mark.parametrize(("document", "grace"), [({}, 300.0), ({"evaluatorGraceSeconds": 0}, 0.0),
                                                ({"evaluatorGraceSeconds": 45.5}, 45.5),
                                                ({"evaluatorGraceSeconds": 86400}, 86400.0)])
def test_evaluator_grace_for_every_job(document: dict[str, Any], grace: float) -> None:
    assert parse_config(document).evaluator_grace_seconds == grace


@pytest.mark.parametrize(("document", "grace"), [({}, 600.0), ({"unknownSchedulingGraceSeconds": 0}, 0.0),
                                                ({"unknownSchedulingGraceSeconds": 90.5}, 90.5),
                                                ({"unknownSchedulingGraceSeconds": 86400}, 86400.0)])
def test_unknown_scheduling_grace_for_every_job(document: dict[str, Any], grace: float) -> None:
    assert parse_config(document).unknown_scheduling_grace_seconds == grace


@pytest.mark.parametrize(("document", "settings"), [
    ({}, CapacityScalingSettings(enabled=False, grow_after=60.0, shrink_after=30.0, give_up_after=120.0,
                                 check_every=5.0)),
    ({"capacityScaling": {"enabled": True}},
     CapacityScalingSettings(enabled=True, grow_after=60.0, shrink_after=30.0, give_up_after=120.0, check_every=5.0)),
    ({"capacityScaling": {"enabled": True, "growAfterSeconds": 10, "shrinkAfterSeconds": 5,
                          "giveUpAfterSeconds": 20.5, "checkEverySeconds": 1}},
     CapacityScalingSettings(enabled=True, grow_after=10.0, shrink_after=5.0, give_up_after=20.5, check_every=1.0)),
    ({"capacityScaling": {"growAfterSeconds": 0}},
     CapacityScalingSettings(enabled=False, grow_after=0.0, shrink_after=30.0, give_up_after=120.0, check_every=5.0)),
], ids=["off-by-default", "on-with-default-windows", "on-with-short-windows", "tuned-but-off"])
def test_capacity_scaling_switch_and_windows(document: dict[str, Any], settings: CapacityScalingSettings) -> None:
    assert parse_config(document).capacity_scaling == settings


@pytest.mark.parametrize(("document", "message"), [
    ([], "the config must be a mapping"),
    ({"serviceDomain": "Svc_Local"}, "serviceDomain 'Svc_Local' is not a DNS suffix"),
    ({"servicedomain": "svc"}, "the config has unknown key 'servicedomain': did you mean 'serviceDomain'?"),
    ({"grpcServerFilePath": "/x"}, "grpcServerFilePath '/x' must be an absolute file path below a directory"),
    ({"grpcServerFilePath": "x.py"}, "grpcServerFilePath 'x.py' must be an absolute file path"),
    ({"tfImage": ""}, "tfImage '' must name an image"),
    ({"accelerators": {"nvidia.com/gpu": {"envVars": [{"name": "1BAD"}]}}},
     "accelerators[nvidia.com/gpu].envVars[0].name must be an environment variable name"),
    ({"accelerators": {"nvidia.com/gpu": {"volumes": [{"name": "lib", "mountPath": "rel", "hostPath": "/x"}]}}},
     "accelerators[nvidia.com/gpu].volumes[0].mountPath must be an absolute path"),
    ({"accelerators": {"nvidia.com/gpu": {"volumes": [{"name": "Lib", "mountPath": "/a", "hostPath": "/x"}]}}},
     "accelerators[nvidia.com/gpu].volumes[0].name must be a DNS label"),
    ({"accelerators": {"nvidia.com/gpu": {"volumes": {"name": "lib"}}}},
     "accelerators[nvidia.com/gpu].volumes must be a list"),
    ({"accelerators": {"nvidia.com/gpu": {"envVar": []}}},
     "accelerators[nvidia.com/gpu] has unknown key 'envVar': did you mean 'envVars'?"),
    ({"childNaming": "GoStyle"}, "childNaming 'GoStyle' is not one of RuntimeId, TypeIndex"),
    ({"replicaBackend": "Jobs"}, "replicaBackend 'Jobs' is not one of pods, jobs"),
    ({"gpuResource": "gpu"}, ("gpuResource 'gpu' is not an extended resource name: a domain, '/' and a name, such "
                              "as nvidia.com/gpu or amd.com/gpu")),
    ({"gpuResource": "alpha.kubernetes.io/nvidia-gpu"},
     "gpuResource 'alpha.kubernetes.io/nvidia-gpu' is in the kubernetes.io domain, which no device plugin offers"),
    ({"accelerators": {"alpha.kubernetes.io/nvidia-gpu": {}, "nvidia.com/gpu": {}}},
     ("accelerators names both alpha.kubernetes.io/nvidia-gpu and nvidia.com/gpu, which tfop takes as one resource "
      "(gpuResource): keep one")),
    ({"evaluatorGraceSeconds": -1}, "evaluatorGraceSeconds must be a number of seconds from 0 to 86400, not -1"),
    ({"evaluatorGraceSeconds": "5m"}, "evaluatorGraceSeconds must be a number of seconds from 0 to 86400, not '5m'"),
    ({"nodeLoss": {"graceSeconds": True}}, "nodeLoss.graceSeconds must be a number of seconds from 0 to 86400"),
    ({"disruptions": {"peerWindowSeconds": "1m"}},
     "disruptions.peerWindowSeconds must be a number of seconds from 0 to 86400, not '1m'"),
    ({"disruptions": {"reclaimNoticeTaints": "aws-node-termination-handler/spot-itn"}},
     "disruptions.reclaimNoticeTaints must be a list, not str"),
    ({"disruptions": {"reclaimNoticeTaints": [""]}}, "disruptions.reclaimNoticeTaints must list taint keys, not ['']"),
    ({"unknownSchedulingGraceSeconds": 86401},
     "unknownSchedulingGraceSeconds must be a number of seconds from 0 to 86400, not 86401"),
    ({"unknownSchedulingGraceSeconds": "10m"},
     "unknownSchedulingGraceSeconds must be a number of seconds from 0 to 86400, not '10m'"),
    ({"unknownSchedulingGracSeconds": 60},
     "the config has unknown key 'unknownSchedulingGracSeconds': did you mean 'unknownSchedulingGraceSeconds'?"),
    ({"capacityScaling": {"enabled": "yes"}}, "capacityScaling.enabled must be true or false, not 'yes'"),
    ({"capacityScaling": {"growAfterSeconds": -5}},
     "capacityScaling.growAfterSeconds must be a number of seconds from 0 to 86400, not -5"),
    ({"capacityScaling": {"checkEverySeconds": 0.5}},
     "capacityScaling.checkEverySeconds must be at least 1 (each look reads every cached pod), not 0.5"),
    ({"capacityScaling": {"shrinkAfterSecond": 10}},
     "capacityScaling has unknown key 'shrinkAfterSecond': did you mean 'shrinkAfterSeconds'?"),
    ({"capacityScaling": True}, "capacityScaling must be a mapping, not bool"),
], ids=["not-a-mapping", "bad-domain", "typo", "server-path-at-root", "relative-server-path", "empty-image",
        "bad-env-name", "relative-mount", "bad-volume-name", "volumes-not-a-list", "accelerator-key-typo",
        "bad-child-naming", "bad-replica-backend", "gpu-resource-not-qualified", "gpu-resource-legacy",
        "accelerators-for-both-gpu-names", "negative-evaluator-grace", "evaluator-grace-as-text",
        "node-loss-grace-as-bool", "peer-window-as-text", "reclaim-taints-not-a-list",
        "reclaim-taint-empty", "unknown-scheduling-grace-over-a-day", "unknown-scheduling-grace-as-text",
        "unknown-scheduling-grace-typo", "capacity-switch-as-text", "capacity-negative-window",
        "capacity-checks-too-often", "capacity-key-typo", "capacity-not-a-mapping"])
def test_bad_config_is_rejected_naming_the_key(document: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=None) as raised:
        parse_config(document)
    assert message in str(raised.value)


def test_unreadable_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("serviceDomain: [unclosed\n")
    with pytest.raises(ConfigError, match=r"cannot read config file .*broken\.yaml"):
        load_config(path)


def test_unknown_keys_are_warnings_naming_them() -> None:
    warnings: list[str] = []
    config = parse_config({"serviceDomain": "svc", "cloud": "azure",
                           "accelerators": {"nvidia.com/gpu": {"envVars": [], "driver": "384"}}}, warnings)
    assert config.service_domain == "svc"
    assert warnings == [
        ("the config has unknown key 'cloud', ignored; known: accelerators, capacityScaling, childNaming, "
         "disruptions, evaluatorGraceSeconds, gangScheduler, gpuResource, grpcServerFilePath, kueue, nodeLoss, "
         "progress, replicaBackend, serviceDomain, tensorboard, tfImage, unknownSchedulingGraceSeconds"),
        "accelerators[nvidia.com/gpu] has unknown key 'driver', ignored; known: envVars, volumes"]


@pytest.mark.parametrize("gpu_resource", [None, "amd.com/gpu"])
def test_seed_003_configmap_loads_as_written(tmp_path: Path, gpu_resource: str | None) -> None:
    """The controller config of seed 003's `kubectl describe configmaps tf-job-operator-config`, copied as is: its
    entry for the legacy GPU name serves the pods that ask for the current one (gpuResource) instead."""
    configmap = yamlio.load((SEEDS / "003-tf-job-operator-config.yaml").read_text())
    path = tmp_path / "controller_config_file.yaml"
    text = configmap["data"]["controller_config_file.yaml"]
    path.write_text(text if gpu_resource is None else f"gpuResource: {gpu_resource}\n{text}")
    warnings: list[str] = []
    config = load_config(path, warnings)
    current = gpu_resource or "nvidia.com/gpu"
    assert config.gpu_resource == current
    assert warnings == [(f"accelerators[alpha.kubernetes.io/nvidia-gpu] applies to {current} (gpuResource), the "
                         "resource pods ask for where their template names the legacy one")]
    assert config.grpc_server_file_path == "/opt/mlkube/grpc_tensorflow_server/grpc_tensorflow_server.py"
    assert list(config.accelerators) == [current]
    gpu = config.accelerators[current]
    assert gpu.env == (("LD_LIBRARY_PATH", "/usr/lib/nvidia:/usr/lib/x86_64-linux-gnu"),)
    assert [volume.name for volume in gpu.volumes] == ["lib", "bin", "libcuda"]
    assert config.tf_image == "tensorflow/tensorflow:2.21.0"


def test_disruptions_default_to_a_minute_and_the_common_reclaim_notices() -> None:
    assert parse_config({}).disruptions == DisruptionSettings(
        60.0, ("aws-node-termination-handler/spot-itn", "cloud.google.com/impending-node-termination"), 50.0)
    assert parse_config({"disruptions": {"peerWindowSeconds": 120, "reclaimNoticeTaints": [],
                                         "nodeSilenceSeconds": 40}}).disruptions == DisruptionSettings(120.0, (), 40.0)
