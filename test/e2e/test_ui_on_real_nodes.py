"""The page in a real browser (Debian's headless Chromium, driven by Selenium) against a real job on the real nodes,
run by the operator: a busybox worker that exits 137 once and then counts a line a second. A user who may read the
namespace sees the job Running in the list; on its page the replica table shows the exit 137 as retryable and the
timeline marks it; the worker's log is there, and followed it grows without a
reload. Screenshots are kept in the test's tmp_path.

The worker restarts in place (restartPolicy OnFailure: kubelet runs the container again in the same pod), so its
marker lives on an emptyDir and the pod's own status keeps the exit the table shows. (With ExitCode the operator
recreates the pod, and the new pod has no earlier exit to show.)"""

from __future__ import annotations

import re
from pathlib import Path

from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from localcluster import LocalCluster
from support.browser import headless_chromium
from support.operator_process import OperatorProcess
from support.real_node_jobs import apply, job_pods, pods_now, shell_container, story, tfjob
from support.ui import UiServer, reader_token, ui_identity
from support.waiting import DEADLINE, KUBECTL_INTERVAL, wait_for

JOB = "counter"
# The first run exits 137 (as a SIGKILL would end it); the run kubelet restarts in the same pod finds the marker on
# the pod's emptyDir and counts, a line a second, for at most 15 minutes, so a leaked job ends by itself.
SCRIPT = ("if [ ! -e /scratch/ran ]; then touch /scratch/ran; echo first run; exit 137; fi; "
          "i=0; while [ $i -lt 900 ]; do i=$((i + 1)); echo \"line $i\"; sleep 1; done")
LINE = re.compile(r"^line (\d+)$")


def text_of(driver: WebDriver, css: str) -> str:
    """The text of the first element `css` selects, "" when there is none or a live update replaced it while it
    was read (then it is read again at the next poll)."""
    try:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        return found[0].text if found else ""
    except StaleElementReferenceException:
        return ""


def clicked(driver: WebDriver, css: str) -> bool:
    try:
        driver.find_element(By.CSS_SELECTOR, css).click()
    except (StaleElementReferenceException, WebDriverException):
        return False
    return True


def counted(text: str) -> list[int]:
    """The counter's numbers in the log text, in the order shown."""
    return [int(match.group(1)) for line in text.splitlines() if (match := LINE.match(line.strip()))]


def test_a_browser_shows_a_real_job_its_retryable_exit_and_its_log_as_it_grows(
        real_node: LocalCluster, operator: OperatorProcess, namespace: str, busybox: str, tmp_path: Path) -> None:
    token = reader_token(real_node, namespace, "reader")
    apply(real_node, namespace, tfjob(JOB, {"Worker": {"restartPolicy": "OnFailure", "spec": {
        "volumes": [{"name": "scratch", "emptyDir": {}}],
        "containers": [shell_container(busybox, SCRIPT, volumeMounts=[{"name": "scratch", "mountPath": "/scratch"}])],
    }}}))
    [pod] = wait_for(lambda: job_pods(real_node, namespace, JOB), message=f"{JOB}'s pod",
                     interval=KUBECTL_INTERVAL, explain=lambda: pods_now(real_node, namespace))
    worker = pod["metadata"]["name"]

    def explain() -> str:
        return f"{pods_now(real_node, namespace)}\nevents:\n{story(real_node, namespace)}"

    screenshots: list[Path] = []

    def screenshot(driver: WebDriver, name: str) -> None:
        screenshots.append(tmp_path / name)
        driver.save_screenshot(str(screenshots[-1]))

    with ui_identity(real_node, namespace, tmp_path) as kubeconfig:
        ui = UiServer(kubeconfig).start()
        driver = headless_chromium(tmp_path)
        try:
            driver.get(ui.url + "/")
            driver.find_element(By.ID, "token").send_keys(token)
            driver.find_element(By.ID, "login").click()
            row = f'tr.job[data-job="{namespace}/{JOB}"]'
            wait_for(lambda: "Running" in text_of(driver, row), DEADLINE,
                     "the list to show the job Running", explain=explain)
            assert text_of(driver, "#user") == f"system:serviceaccount:{namespace}:reader"
            screenshot(driver, "job-list.png")

            wait_for(lambda: clicked(driver, f"{row} a"), message="a click on the job's link")
            wait_for(lambda: text_of(driver, "#job-state"), message="the job's page")
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
            screenshot(driver, "job-page.png")

            # The worker's log. (Not the container before the restart: kubelet may remove that dead container at
            # any time, and the apiserver then answers "unable to retrieve container logs", seen in 1 run of 4.)
            pod_url = f"{ui.url}/namespaces/{namespace}/tfjobs/{JOB}/pods/{worker}"

            def tail() -> list[int]:
                driver.get(pod_url)  # a tail is read once per view: look again until the counter wrote a line
                return counted(text_of(driver, "#log"))

            wait_for(tail, DEADLINE, "the worker's counted lines in its log", interval=KUBECTL_INTERVAL,
                     explain=lambda: f"the log part: {text_of(driver, '#log, #log-problem')!r}")

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
            screenshot(driver, "pod-log-followed.png")
            print("screenshots: " + " ".join(str(path) for path in screenshots))
        except BaseException:
            (tmp_path / "failed.html").write_text(driver.page_source)
            driver.save_screenshot(str(tmp_path / "failed.png"))
            print(f"at {driver.current_url}, the page: {tmp_path / 'failed.html'}; screenshots: {screenshots}")
            raise
        finally:
            driver.quit()
            ui.stop()
