"""What a mistake at start looks like: exit 2 and one plain line (after one structured line) naming the flag or
file and the fix; the same for an apiserver nobody listens on, with exit 1. No traceback, ever."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pytest_mock import MockerFixture

from tfop.cli import build_parser
from tfop.startup import ListenAddress, StartupError, parse_listen_address


def tfop_run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
    return subprocess.run([sys.executable, "-m", "tfop", "run", "--log-format", "json", *args], capture_output=True,
                          text=True, timeout=60, env={**environment, **(env or {})}, check=False)


def assert_one_error(result: subprocess.CompletedProcess[str], exit_code: int, *fragments: str) -> dict[str, Any]:
    """stderr is one JSON log line, then one plain line with every fragment; stdout is empty."""
    assert result.returncode == exit_code, result.stderr
    assert result.stdout == ""
    *structured, plain = result.stderr.splitlines()
    assert "Traceback" not in result.stderr
    assert plain.startswith("tfop: error: ") and all(f in plain for f in fragments), plain
    [line] = structured
    record: dict[str, Any] = json.loads(line)
    assert record["level"] == "error" and record["exit_code"] == exit_code
    return record


@pytest.mark.parametrize(("args", "fragments"), [
    (["--qps", "0"], ["--qps", "above 0", "not 0"]),
    (["--qps", "-5"], ["--qps", "not -5"]),
    (["--qps", "nan"], ["--qps", "not nan"]),
    (["--qps", "1e9"], ["--qps", "at most 100000"]),
    (["--burst", "0"], ["--burst", "from 1 to"]),
    (["--threads", "0"], ["--threads", "from 1 to 256"]),
    (["--threads", "many"], ["--threads", "whole number", "'many'"]),
    (["--drain-seconds", "-1"], ["--drain-seconds", "at least 0"]),
    (["--namespace", ""], ["--namespace", "cannot be empty", "leave the flag out"]),
    (["--namespace", "Team_A"], ["--namespace", "'Team_A' is not a namespace name"]),
    (["--leader-elect-id", "Not A Name"], ["--leader-elect-id"]),
    (["--log-level", "loud"], ["--log-level", "invalid choice"]),
], ids=lambda value: " ".join(value) if isinstance(value, list) and value and value[0].startswith("--") else None)
def test_bad_flags_exit_2_naming_the_flag(args: list[str], fragments: list[str], mocker: MockerFixture) -> None:
    report = mocker.patch("tfop.cli.report_startup_error")
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["run", *args])
    assert exited.value.code == 2
    [[error]] = [call.args for call in report.call_args_list]
    assert isinstance(error, StartupError) and error.exit_code == 2 and error.event == "invalid flags"
    assert all(fragment in str(error) for fragment in fragments), str(error)
    assert error.fix == "see `tfop run --help`"


def test_a_bad_flag_is_one_json_line_and_one_plain_line() -> None:
    record = assert_one_error(tfop_run("--qps", "0"), 2, "argument --qps: must be above 0", "tfop run --help")
    assert record["event"] == "invalid flags"


def test_a_bad_address_is_named_with_the_fix() -> None:
    assert_one_error(tfop_run("--metrics-addr", "::1:8080"), 2, "--metrics-addr '::1:8080'", "write [::1]:8080")


def test_a_missing_kubeconfig_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    assert_one_error(tfop_run("--kubeconfig", str(missing)), 2, f"--kubeconfig {missing}: no such file")
    assert_one_error(tfop_run(env={"KUBECONFIG": str(missing)}), 2, f"$KUBECONFIG {missing}: no such file")


def test_a_kubeconfig_that_is_not_one_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    assert_one_error(tfop_run("--kubeconfig", str(broken)), 2, f"cannot use kubeconfig {broken}", "--kubeconfig")


def test_a_bad_config_file_is_named(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("serviceDomain: Not_A_Domain\n")
    record = assert_one_error(tfop_run("--config", str(config)), 2, str(config), "serviceDomain")
    assert record["event"] == "invalid configuration"


def test_the_webhook_names_a_bad_gpu_resource_in_its_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("gpuResource: gpu\n")
    result = subprocess.run([sys.executable, "-m", "tfop", "webhook", "--log-format", "json", "--config", str(config),
                             "--addr", "127.0.0.1:0", "--cert-dir", str(tmp_path)],
                            capture_output=True, text=True, timeout=60, check=False)
    record = assert_one_error(result, 2, str(config), "gpuResource 'gpu' is not an extended resource name")
    assert record["event"] == "invalid configuration"


def test_an_apiserver_nobody_listens_on_exits_1_after_a_few_tries(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
""")
    record = assert_one_error(tfop_run("--kubeconfig", str(kubeconfig), "--metrics-addr", "127.0.0.1:0",
                                       "--health-addr", "127.0.0.1:0"),
                              1, "cannot reach the apiserver at https://127.0.0.1:1", "make cluster-status")
    assert record["event"] == "cluster unreachable"


def test_flags_in_range_parse() -> None:
    args = build_parser().parse_args(["run", "--qps", "0.5", "--burst", "1", "--threads", "256", "--drain-seconds",
                                      "0", "--namespace", "team-a", "--namespace", "b"])
    assert (args.qps, args.burst, args.threads, args.drain_seconds) == (0.5, 1, 256, 0.0)
    assert args.namespace == ["team-a", "b"]


@pytest.mark.parametrize(("text", "expected"), [
    (":8080", ListenAddress("", 8080)), ("127.0.0.1:0", ListenAddress("127.0.0.1", 0)),
    ("[::1]:8080", ListenAddress("::1", 8080)), ("[::]:9090", ListenAddress("::", 9090)),
    ("localhost:80", ListenAddress("localhost", 80)),
])
def test_listen_addresses(text: str, expected: ListenAddress) -> None:
    assert parse_listen_address(text, "--metrics-addr") == expected


@pytest.mark.parametrize("text", ["8080", "[::1]8080", "[::1", "host:port", "::1:8080", ":-1"])
def test_listen_addresses_refused(text: str) -> None:
    with pytest.raises(StartupError) as raised:
        parse_listen_address(text, "--metrics-addr")
    assert raised.value.exit_code == 2 and "--metrics-addr" in raised.value.problem


def test_a_failed_certificate_check_is_recognised_through_urllib3s_wrappers() -> None:
    import ssl

    import urllib3

    from tfop.kube.errors import is_tls_verification_failure, tls_failure_text

    check = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    check.verify_message = "unable to get local issuer certificate"
    wrapped = urllib3.exceptions.MaxRetryError(None, "/", urllib3.exceptions.SSLError(check))  # type: ignore[arg-type]
    assert is_tls_verification_failure(wrapped)
    assert tls_failure_text(wrapped) == "certificate verify failed: unable to get local issuer certificate"
    assert not is_tls_verification_failure(urllib3.exceptions.NewConnectionError(None, "refused"))  # type: ignore[arg-type]
