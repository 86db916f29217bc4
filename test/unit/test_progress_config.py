"""The config file's `progress` (tfop/config.py): off by default, one switch and the address pods reach it at."""

from __future__ import annotations

from typing import Any

import pytest

from tfop.config import ConfigError, parse_config
from tfop.controller.plan.controller_config import ProgressSettings

URL = "https://tfop.tfop-system.svc:8444"
GOOD: dict[str, tuple[dict[str, Any], ProgressSettings]] = {
    "left out: off": ({}, ProgressSettings()),
    "on, with the url": ({"progress": {"enabled": True, "url": URL + "/"}}, ProgressSettings(enabled=True, url=URL)),
    "every key": ({"progress": {"enabled": True, "url": URL, "address": "0.0.0.0:9443", "certDir": "/certs",
                                "reportsPerSecond": 0.5, "burst": 3, "tokenSeconds": 7200}},
                  ProgressSettings(enabled=True, url=URL, address="0.0.0.0:9443", cert_dir="/certs",
                                   reports_per_second=0.5, burst=3, token_seconds=7200)),
    "off needs no url": ({"progress": {"enabled": False}}, ProgressSettings()),
}


@pytest.mark.parametrize(("document", "expected"), GOOD.values(), ids=GOOD.keys())
def test_progress_settings(document: dict[str, Any], expected: ProgressSettings) -> None:
    assert parse_config(document).progress == expected


BAD: dict[str, tuple[dict[str, Any], str]] = {
    "on without a url": ({"enabled": True}, ("progress.url '' must be the https:// address pods reach the "
                                             "endpoint at, without a path, such as https://tfop.tfop-system.svc:8444")),
    "plain http": ({"enabled": True, "url": "http://tfop:8444"}, "progress.url 'http://tfop:8444' must be"),
    "a path": ({"enabled": True, "url": URL + "/report"}, f"progress.url '{URL}/report' must be"),
    "enabled as text": ({"enabled": "yes"}, "progress.enabled must be true or false, not 'yes'"),
    "a port-less address": ({"address": "0.0.0.0"}, "progress.address '0.0.0.0' must be host:port or :port"),
    "no rate": ({"reportsPerSecond": 0}, "progress.reportsPerSecond must be a number above 0 and at most 1000"),
    "a token too short for the apiserver": ({"tokenSeconds": 60}, ("progress.tokenSeconds must be a whole number "
                                                                  "from 600 to 86400, not 60")),
    "a near miss": ({"enable": True}, "progress has unknown key 'enable': did you mean 'enabled'?"),
}


@pytest.mark.parametrize(("section", "message"), BAD.values(), ids=BAD.keys())
def test_progress_settings_refused(section: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"progress": section})
    assert message in str(raised.value)
