"""An informer as /healthz sees it while it starts: the probe runs on another thread, and a started informer whose
thread is not alive is reported dead (the operator's liveness fails). Under load thread.start() is slow enough for
a probe to land inside it; CI saw /healthz answer 500 at an operator's start that way."""

from __future__ import annotations

import threading
from typing import cast

from pytest_mock import MockerFixture

from tfop.kube.client import KubeClient
from tfop.kube.informer import Informer
from tfop.kube.resource import CONFIGMAPS


def test_a_probe_during_start_never_sees_a_started_informer_that_is_not_running(mocker: MockerFixture) -> None:
    informer = Informer(cast(KubeClient, None), CONFIGMAPS)
    informer.stop()  # so its thread returns at once, before any request
    seen: list[tuple[bool, bool]] = []
    start = threading.Thread.start

    def probed_start(thread: threading.Thread) -> None:
        seen.append((informer.has_started(), informer.is_alive()))  # what a probe here would read
        start(thread)

    mocker.patch.object(threading.Thread, "start", probed_start)
    informer.start()
    assert seen == [(False, False)]
    assert informer.has_started()
