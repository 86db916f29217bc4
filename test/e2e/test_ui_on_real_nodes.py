"""The page in a real browser (Debian's headless Chromium, driven by Selenium) against real jobs on the real nodes,
run by the operator, each a busybox worker that exits 137 once, as a user who may read the namespace.

Restarted in place (restartPolicy OnFailure: kubelet runs the container again in the same pod, its marker on an
emptyDir), the worker then counts a line a second: the list shows the job Running; on its page the replica table
shows the exit 137 as retryable and the restart, the timeline marks it; the worker's log is there, so is the log of
the container before the restart, and followed the log grows without a reload.

Recreated (restartPolicy ExitCode: the operator deletes the pod and makes it again, its marker on a host directory
that outlives the pod): the new pod has no exit of its own, and the table still shows the replica's exit 137 as
retryable, from the job's status, and the timeline marks it.

Screenshots are kept in the test's tmp_path."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from localcluster import LocalCluster
from support.browser import clicked, headless_chromium, keep_failed_page, text_of, texts_of
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, get, job_pods, pods_now, shell_container, story, tfjob
from support.ui import UiServer, reader_token, ui_identity
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for

JOB = "counter"
# The first run exits 137 (as a SIGKILL would end it); the next run, in the same pod (OnFailure) or a new one
# (ExitCode), finds the marker and counts, a line a second, for at most 15 minutes, so a leaked job ends by itself.
SCRIPT = ("if [ ! -e /scratch/ran ]; then touch /scratch/ran; echo first run; exit 137; fi; "
          "i=0; while [ $i -lt 900 ]; do i=$((i + 1)); echo \"line $i\"; sleep 1; done")
RECREATED_JOB = "recreated"
LINE = re.compile(r"^line (\d+)$")


def counted(text: str) -> list[int]:
    """The counter's numbers in the log text, in the order shown."""
    return [int(match.group(1)) for line in text.splitlines() if (match := LINE.match(line.strip()))]


class Browser:
    """A logged-in browser on a page server running as the test's ui identity; what it saw is kept as screenshots."""

    def __init__(self, driver: WebDriver, url: str, tmp_path: Path) -> None:
        self.driver, self.url, self.tmp_path = driver, url, tmp_path
        self.screenshots: list[Path] = []

    def screenshot(self, name: str) -> None:
        self.screenshots.append(self.tmp_path / name)
        self.driver.save_screenshot(str(self.screenshots[-1]))


@contextmanager
def browsing(cluster: LocalCluster, namespace: str, token: str, tmp_path: Path) -> Iterator[Browser]:
    with ui_identity(cluster, namespace, tmp_path) as kubeconfig:
        ui = UiServer(kubeconfig).start()
        browser = Browser(headless_chromium(tmp_path), ui.url, tmp_path)
        driver = browser.driver
        try:
            driver.get(ui.url + "/")
            driver.find_element(By.ID, "token").send_keys(token)
            driver.find_element(By.ID, "login").click()
            yield browser
            print("screenshots: " + " ".join(str(path) for path in browser.screenshots))
        except BaseException:
            keep_failed_page(driver, tmp_path)
            print(f"screenshots: {browser.screenshots}")
            raise
        finally:
            driver.quit()
            ui.stop()


def worker_job(name: str, policy: str, busybox: str, scratch: dict[str, Any]) -> dict[str, Any]:
    """A job of one worker running SCRIPT, its marker on the `scratch` volume."""
    return tfjob(name, {"Worker": {"restartPolicy": policy, "spec": {
        "volumes": [{"name": "scratch", **scratch}],
        "containers": [shell_container(busybox, SCRIPT, volumeMounts=[{"name": "scratch", "mountPath": "/scratch"}])],
    }}})


def open_job(driver: WebDriver, namespace: str, job: str, explain: Callable[[], str]) -> None:
    """From the list, where the job shows Running, to the job's page."""
    row = f'tr.job[data-job="{namespace}/{job}"]'
    wait_for(lambda: "Running" in text_of(driver, row), DEADLINE, "the list to show the job Running", explain=explain)
    wait_for(lambda: clicked(driver, f"{row} a"), message="a click on the job's link")
    wait_for(lambda: text_of(driver, "#job-state"), message="the job's page")


def test_a_browser_shows_a_real_job_its_retryable_exit_and_its_log_as_it_grows(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, busybox: str, tmp_path: Path) -> None:
    token = reader_token(real_node, namespace, "reader")
    apply(real_node, namespace, worker_job(JOB, "OnFailure", busybox, {"emptyDir": {}}))
    [pod] = wait_for(lambda: job_pods(real_node, namespace, JOB), message=f"{JOB}'s pod",
                     interval=KUBECTL_INTERVAL, explain=lambda: pods_now(real_node, namespace))
    worker = pod["metadata"]["name"]

    def explain() -> str:
        return f"{pods_now(real_node, namespace)}\nevents:\n{story(real_node, namespace)}"

    with browsing(real_node, namespace, token, tmp_path) as browser:
        driver = browser.driver
        wait_for(lambda: "Running" in text_of(driver, f'tr.job[data-job="{namespace}/{JOB}"]'), DEADLINE,
                 "the list to show the job Running", explain=explain)
        assert text_of(driver, "#user") == f"system:serviceaccount:{namespace}:reader"
        browser.screenshot("job-list.png")

        open_job(driver, namespace, JOB, explain)
        driver.execute_script("window.tfopMarker = 'not reloaded'")
        # The exit 137 of the first run, in the table (the pod's last termination) and on the timeline, as the
        # page updates itself.
        exit_cell = f'tr.replica[data-pod="{worker}"] td.exit'
        wait_for(lambda: re.fullmatch(r"137 .*\(retryable\)", text_of(driver, exit_cell)),
                 DEADLINE, "the replica table to show the exit 137 as retryable",
                 explain=lambda: f"cell: {text_of(driver, exit_cell)!r}; {explain()}")
        wait_for(lambda: "137" in text_of(driver, "#timeline g.exit-retryable"), DEADLINE,
                 "the timeline to mark the exit 137", explain=explain)
        wait_for(lambda: text_of(driver, f'tr.replica[data-pod="{worker}"] td:nth-child(6)') == "1", DEADLINE,
                 "the replica table to count the restart", explain=explain)
        wait_for(lambda: text_of(driver, "#job-state") == "Running", DEADLINE,
                 "the job's page to show it Running after the restart", explain=explain)
        assert driver.execute_script("return window.tfopMarker") == "not reloaded"
        browser.screenshot("job-page.png")

        pod_url = f"{browser.url}/namespaces/{namespace}/tfjobs/{JOB}/pods/{worker}"

        def tail() -> list[int]:
            driver.get(pod_url)  # a tail is read once per view: look again until the counter wrote a line
            return counted(text_of(driver, "#log"))

        wait_for(tail, DEADLINE, "the worker's counted lines in its log", interval=KUBECTL_INTERVAL,
                 explain=lambda: f"the log part: {text_of(driver, '#log, #log-problem')!r}")

        # The container before the restart (counted above, so there is one). kubelet keeps one dead container per
        # container, and the nodes' kubelets keep it a minute at least, so the new container, made but not yet
        # started, does not get it collected (hack/localcluster/node.py).
        def previous() -> str:
            driver.get(pod_url + "?previous=1")
            return text_of(driver, "#log").strip()

        assert wait_for(previous, DEADLINE, "the log of the container before the restart",
                        interval=KUBECTL_INTERVAL,
                        explain=lambda: f"the log part: {text_of(driver, '#log, #log-problem')!r}") == "first run"
        browser.screenshot("pod-log-previous.png")

        # Followed: lines arrive without a reload, in order, none twice.
        driver.get(pod_url + "?follow=1")
        driver.execute_script("window.tfopMarker = 'not reloaded'")
        first = wait_for(lambda: counted(text_of(driver, "#log")), DEADLINE, "the followed log's first lines",
                         explain=lambda: text_of(driver, "#follow-state"))

        def three_more() -> list[int] | None:
            seen = counted(text_of(driver, "#log"))
            return seen if seen and seen[-1] >= first[-1] + 3 else None

        grown = wait_for(three_more, DEADLINE, "three more lines in the followed log",
                         explain=lambda: f"follow state: {text_of(driver, '#follow-state')!r}")
        assert grown == list(range(grown[0], grown[-1] + 1)), f"lines missing or repeated: {grown}"
        assert text_of(driver, "#follow-state") == "following…"
        assert driver.execute_script("return window.tfopMarker") == "not reloaded"
        browser.screenshot("pod-log-followed.png")


def test_a_browser_shows_the_exit_of_a_pod_the_operator_recreated(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, busybox: str, tmp_path: Path) -> None:
    token = reader_token(real_node, namespace, "reader")
    marker = tmp_path / "marker"  # outlives the pod, unlike an emptyDir
    marker.mkdir()
    apply(real_node, namespace, worker_job(RECREATED_JOB, "ExitCode", busybox,
                                           {"hostPath": {"path": str(marker), "type": "Directory"}}))

    def explain() -> str:
        return f"{pods_now(real_node, namespace)}\nevents:\n{story(real_node, namespace)}"

    def recreated_and_running() -> tuple[dict[str, Any], dict[str, Any]] | None:
        job = get(real_node, namespace, "tfjob", RECREATED_JOB)
        pods = [pod for pod in job_pods(real_node, namespace, RECREATED_JOB)
                if pod["status"].get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")]
        kept = job.get("status", {}).get("replicaStatuses", {}).get("Worker", {}).get("recreatedExits")
        return (job, pods[0]) if kept and len(pods) == 1 else None

    # The page starts only after the recreation, so it never sees the pod that exited: what it shows of that exit
    # comes from the job's status.
    job, pod = wait_for(recreated_and_running, DEADLINE, "the worker's pod recreated and running",
                        interval=KUBECTL_INTERVAL, explain=explain)
    [kept] = job["status"]["replicaStatuses"]["Worker"]["recreatedExits"]
    assert (kept["index"], kept["exitCode"], kept["reason"]) == (0, 137, "Error"), kept
    [status] = pod["status"]["containerStatuses"]
    assert "terminated" not in status["state"] and "terminated" not in status.get("lastState", {}), status
    worker = pod["metadata"]["name"]

    with browsing(real_node, namespace, token, tmp_path) as browser:
        driver = browser.driver
        open_job(driver, namespace, RECREATED_JOB, explain)
        row = f'tr.replica[data-pod="{worker}"]'
        exit_cell = f"{row} td.exit"
        wait_for(lambda: text_of(driver, exit_cell) == "137 Error (retryable), pod recreated", DEADLINE,
                 "the replica table to show the recreated pod's exit 137 as retryable",
                 explain=lambda: f"cell: {text_of(driver, exit_cell)!r}; {explain()}")
        assert text_of(driver, f"{row} td:nth-child(5)") == "Running"
        # Restarts count the recreation as the list does (its pod's own restarts are 0), so table and list agree
        assert text_of(driver, f"{row} td:nth-child(6)") == "1"
        marks = wait_for(lambda: texts_of(driver, "#timeline g.exit-retryable text"), DEADLINE,
                         "the timeline to mark the exit 137", explain=explain)
        assert marks == ["137"], marks
        browser.screenshot("job-page-recreated.png")
