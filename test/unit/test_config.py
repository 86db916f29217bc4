from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tfop.config import ConfigError, load_config, parse_config
from tfop.controller.accelerators import Accelerator, HostVolume

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


@pytest.mark.parametrize(("document", "message"), [
    ([], "the config must be a mapping"),
    ({"serviceDomain": "Svc_Local"}, "serviceDomain 'Svc_Local' is not a DNS suffix"),
    ({"grpcServerFilePath": "/x"}, "the config has unknown key(s) grpcServerFilePath"),
    ({"accelerators": {"nvidia.com/gpu": {"envVars": [{"name": "1BAD"}]}}},
     "accelerators[nvidia.com/gpu].envVars[0].name must be an environment variable name"),
    ({"accelerators": {"nvidia.com/gpu": {"volumes": [{"name": "lib", "mountPath": "rel", "hostPath": "/x"}]}}},
     "accelerators[nvidia.com/gpu].volumes[0].mountPath must be an absolute path"),
    ({"accelerators": {"nvidia.com/gpu": {"volumes": [{"name": "Lib", "mountPath": "/a", "hostPath": "/x"}]}}},
     "accelerators[nvidia.com/gpu].volumes[0].name must be a DNS label"),
    ({"accelerators": {"nvidia.com/gpu": {"volumes": {"name": "lib"}}}},
     "accelerators[nvidia.com/gpu].volumes must be a list"),
    ({"accelerators": {"nvidia.com/gpu": {"env": []}}},
     "accelerators[nvidia.com/gpu] has unknown key(s) env"),
    ({"childNaming": "GoStyle"}, "childNaming 'GoStyle' is not one of RuntimeId, TypeIndex"),
], ids=["not-a-mapping", "bad-domain", "unknown-key", "bad-env-name", "relative-mount", "bad-volume-name",
        "volumes-not-a-list", "unknown-accelerator-key", "bad-child-naming"])
def test_bad_config_is_rejected_naming_the_key(document: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=None) as raised:
        parse_config(document)
    assert message in str(raised.value)


def test_unreadable_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("serviceDomain: [unclosed\n")
    with pytest.raises(ConfigError, match=r"cannot read config file .*broken\.yaml"):
        load_config(path)
