"""The page in a real browser (Debian's headless Chromium, driven by Selenium): a user logs in with a token, sees
their job in the list, opens it, and watches it change without a reload while kwok's pods restart and end (the
operator running it); a message with markup in it is shown as text, and so is a link a job names that is not
http(s); a replica's page shows its TF_CONFIG; a worker that exits 137 under restartPolicy ExitCode, its pod
recreated, still shows that exit in the table and on the timeline. Screenshots are kept in the test's tmp_path."""

from __future__ import annotations

import json
import time
from pathlib import Path

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from fake_kubelet import exit_pod, restart_in_place
from localcluster import LocalCluster
from support.browser import clicked, headless_chromium, keep_failed_page, text_of, texts_of
from support.operator_process import OperatorProcess
from support.tfjobs import TFJOBS, pods_by_name, replica, tfjob
from support.ui import UiServer, reader_token, ui_identity
from support.waiting import wait_for
from tfop.api.timestamps import parse_time
from tfop.kube.client import KubeClient
from tfop.kube.resource import EVENTS, PODS
from tfop.ui.views.clock_text import age_text

MARKUP = '<script>window.pwned = 1</script><b id="injected">bold</b>'


def event_messages(driver: WebDriver) -> list[str]:
    try:
        return [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "tr.event td.message")]
    except StaleElementReferenceException:
        return []


def job_links(driver: WebDriver) -> tuple[list[tuple[str | None, str | None]], list[str]] | None:
    """The links the job's page names: (href, rel) of each one shown as a link, and the text of each shown as text;
    None when a live update replaced them while they were read (they are inside the part it replaces)."""
    try:
        links = [(a.get_attribute("href"), a.get_attribute("rel"))
                 for a in driver.find_elements(By.CSS_SELECTOR, "#job-links a")]
        texts = [span.text for span in driver.find_elements(By.CSS_SELECTOR, "#job-links .not-a-link")]
    except StaleElementReferenceException:
        return None
    return links, texts


def markup_event(job: dict[str, object], namespace: str) -> dict[str, object]:
    """An event about the job whose message is markup, as any client with create on events could record."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    meta = job["metadata"]
    assert isinstance(meta, dict)
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "markup-probe", "namespace": namespace},
            "involvedObject": {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": meta["name"],
                               "namespace": namespace, "uid": meta["uid"]},
            "type": "Warning", "reason": "Probe", "message": MARKUP, "source": {"component": "test"},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1}


def test_a_browser_follows_a_job_live_and_shows_markup_as_text(cluster: LocalCluster, tfjob_crd: Path,
                                                              kube_client: KubeClient, namespace: str,
                                                              operator: OperatorProcess, tmp_path: Path) -> None:
    token = reader_token(cluster, namespace, "alice")
    body = tfjob("browsed", Worker=replica(2, restart_policy="OnFailure"))
    body["metadata"]["annotations"] = {"tfop.kubeflow.org/link-tensorboard": "https://tb.example/#run=browsed",
                                       "tfop.kubeflow.org/link-grafana": "javascript:window.pwned = 2"}
    job = kube_client.create(TFJOBS, body, namespace)
    kube_client.create(TFJOBS, tfjob("recreated", Worker=replica(1, restart_policy="ExitCode")), namespace)
    kube_client.create(EVENTS, markup_event(job, namespace), namespace)
    with ui_identity(cluster, namespace, tmp_path) as kubeconfig:
        ui = UiServer(kubeconfig).start()
        driver = headless_chromium(tmp_path)
        try:
            driver.get(ui.url + "/")
            driver.find_element(By.ID, "token").send_keys(token)
            driver.find_element(By.ID, "login").click()
            row = f'tr.job[data-job="{namespace}/browsed"]'
            wait_for(lambda: text_of(driver, row), message="the job in the list")
            assert text_of(driver, "#user") == f"system:serviceaccount:{namespace}:alice"
            # The list follows the job's state without a reload.
            wait_for(lambda: "Running" in text_of(driver, row), message="the list to show the job Running")
            driver.save_screenshot(str(tmp_path / "job-list.png"))

            wait_for(lambda: clicked(driver, f"{row} a"), message="a click on the job's link")
            wait_for(lambda: text_of(driver, "#job-state") == "Running", message="the job page, Running")
            driver.execute_script("window.tfopMarker = 'not reloaded'")
            # The links the job names: the https one a link that gives the opened page no handle on this one, the
            # javascript: one only text.
            assert wait_for(lambda: job_links(driver), message="the job's links, read whole") == (
                [("https://tb.example/#run=browsed", "noopener noreferrer")], ["javascript:window.pwned = 2"])

            pods = pods_by_name(kube_client, namespace, "browsed")
            worker = {pod["metadata"]["labels"]["training.kubeflow.org/replica-index"]: name
                      for name, pod in pods.items()}
            restart_in_place(kube_client, namespace, worker["1"], 137, 1)
            restarted = f'tr.replica[data-pod="{worker["1"]}"] td.exit'
            wait_for(lambda: text_of(driver, restarted) == "137 Error (retryable)",
                     message="the replica table to show the exit 137")
            wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#timeline g.exit-retryable"),
                     message="the timeline to mark the restart")
            exit_pod(kube_client, namespace, worker["0"], 0)
            exit_pod(kube_client, namespace, worker["1"], 0)
            wait_for(lambda: text_of(driver, "#job-state") == "Succeeded", message="the page to show Succeeded")
            assert driver.execute_script("return window.tfopMarker") == "not reloaded"
            assert int(driver.find_element(By.ID, "job-live").get_attribute("data-updates") or 0) >= 2

            wait_for(lambda: MARKUP in event_messages(driver), message="the markup event's message, as text")
            assert driver.find_elements(By.ID, "injected") == []
            assert driver.execute_script("return window.pwned") is None
            driver.save_screenshot(str(tmp_path / "job-page.png"))

            # A replica's page: the TF_CONFIG its pod got (one GET as the ui, after the user's review), and its log
            # or, where kwok's node has none to give, the apiserver's answer as text.
            driver.get(f"{ui.url}/namespaces/{namespace}/tfjobs/browsed/pods/{worker['0']}")
            tf_config = json.loads(text_of(driver, "#tf-config"))
            assert tf_config["task"] == {"type": "worker", "index": 0}
            assert len(tf_config["cluster"]["worker"]) == 2
            log_part = driver.find_elements(By.CSS_SELECTOR, "#log, #log-problem")
            assert log_part, "the pod page shows neither a log nor why there is none"
            print(f"the log part of {worker['0']}'s page: {log_part[0].text[:200]!r}")
            driver.save_screenshot(str(tmp_path / "pod-page.png"))

            # restartPolicy ExitCode: the operator deletes the pod that exited 137 and makes it again under its name;
            # the new pod has no exit of its own, and the replica still shows the 137, from the job's status.
            driver.get(f"{ui.url}/namespaces/{namespace}/tfjobs/recreated")
            [(name, first)] = wait_for(lambda: [(name, pod) for name, pod in pods_by_name(
                kube_client, namespace, "recreated").items() if pod["status"].get("phase") == "Running"],
                message="the ExitCode worker running")
            exit_pod(kube_client, namespace, name, 137)
            cell = f'tr.replica[data-pod="{name}"] td.exit'
            wait_for(lambda: text_of(driver, cell) == "137 Error (retryable), pod recreated",
                     message="the table to show the recreated pod's exit 137")
            recreated = pods_by_name(kube_client, namespace, "recreated")[name]
            assert recreated["metadata"]["uid"] != first["metadata"]["uid"]
            # One mark: the old pod's own (the page saw it), not a second one from the status.
            marks = wait_for(lambda: texts_of(driver, "#timeline g.exit-retryable text"),
                             message="the timeline's exit marks, read whole")
            assert marks == ["137"], marks
            # Its restarts as the list counts them (the status's), the pod recreated once, not 0 for the new pod.
            restarts = f'tr.replica[data-pod="{name}"] td.restarts'
            wait_for(lambda: text_of(driver, restarts) == "1", message="the table to count the recreation")
            driver.save_screenshot(str(tmp_path / "job-page-recreated.png"))
            driver.get(ui.url + "/")
            wait_for(lambda: text_of(driver, f'tr.job[data-job="{namespace}/recreated"] td.col-restarts') == "1",
                     message="the list to agree: 1 restart")
            print(f"screenshots: {tmp_path / 'job-list.png'} {tmp_path / 'job-page.png'} {tmp_path / 'pod-page.png'} "
                  f"{tmp_path / 'job-page-recreated.png'}")
        except BaseException:
            keep_failed_page(driver, tmp_path)
            raise
        finally:
            driver.quit()
            ui.stop()


def live_part_updated(driver: WebDriver, part: str) -> bool:
    """Whether the page's live part had its first update: it sets every piece once, so an element read before
    may be replaced; after it, only what changes is."""
    try:
        return int(driver.find_element(By.ID, part).get_attribute("data-updates") or 0) >= 1
    except (StaleElementReferenceException, NoSuchElementException):
        return False


def row_names(driver: WebDriver) -> list[str]:
    return [name.split("/", 1)[1] for name in attributes_of(driver, "tr.job", "data-job")]


def attributes_of(driver: WebDriver, css: str, attribute: str) -> list[str]:
    try:
        return [str(element.get_attribute(attribute)) for element in driver.find_elements(By.CSS_SELECTOR, css)]
    except StaleElementReferenceException:
        return []


def created_one_second_apart(kube_client: KubeClient, namespace: str, names: list[str],
                             after: str) -> dict[str, str]:
    """The jobs made in this order, each in a later second than the one before and than `after` (creationTimestamp
    has seconds only)."""
    created: dict[str, str] = {}
    last = after
    for name in names:
        wait_for(lambda last=last: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) > last,
                 message="the clock to pass the last job's second")
        last = created[name] = kube_client.create(TFJOBS, tfjob(name, Worker=replica()),
                                                  namespace)["metadata"]["creationTimestamp"]
    return created


LONG_WHY = "worker 0 exited 1 (permanent): the training script raised ValueError and the job will not be retried"


def test_the_list_reads_like_a_dashboard(cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient,
                                         namespace: str, tmp_path: Path) -> None:
    """Newest first; sorted by a header's click; searched; paged; started, finished and duration with the moment
    on hover; the Why column readable at 800 px; and a user with no rights told so, not shown an empty list.
    No operator runs: the test writes the status the operator would."""
    batch = [kube_client.create(TFJOBS, tfjob(f"batch-{index}", Worker=replica()), namespace)
             for index in range(9)]
    created = created_one_second_apart(kube_client, namespace, ["zeta", "alpha", "mid"],
                                       batch[-1]["metadata"]["creationTimestamp"])
    kube_client.patch_status(TFJOBS, "zeta", {"status": {
        "startTime": created["zeta"], "completionTime": created["mid"],
        "conditions": [{"type": "Failed", "status": "True", "reason": "TFJobFailed", "message": LONG_WHY,
                        "lastTransitionTime": created["mid"]}]}}, namespace)
    token = reader_token(cluster, namespace, "alice")
    cluster.kubectl("create", "serviceaccount", "carol", "-n", namespace)
    carol = cluster.kubectl("create", "token", "carol", "-n", namespace, "--duration=30m").stdout.strip()
    with ui_identity(cluster, namespace, tmp_path) as kubeconfig:
        ui = UiServer(kubeconfig).start()
        driver = headless_chromium(tmp_path)
        try:
            driver.get(ui.url + "/login")
            promised = text_of(driver, "#login-lasts")
            driver.find_element(By.ID, "token").send_keys(token)
            driver.find_element(By.ID, "login").click()
            # The login's words match its cookie: one that outlives the browser, for the hours they say.
            expiry = wait_for(lambda: (driver.get_cookie("tfop-ui-token") or {}).get("expiry"),
                              message="the login cookie's expiry")
            hours = round((expiry - time.time()) / 3600)
            assert promised.startswith(f"for {hours} hours, even if you close the browser"), (promised, hours)
            wait_for(lambda: len(row_names(driver)) == 12 and live_part_updated(driver, "jobs"),
                     message="the twelve jobs in the list, updated live once")
            # Newest first: mid, alpha, zeta, then the batch made before them.
            assert row_names(driver)[:4] == ["mid", "alpha", "zeta", "batch-8"], row_names(driver)
            zeta = 'tr.job[data-job$="/zeta"]'
            hover = driver.find_element(By.CSS_SELECTOR, f"{zeta} td.col-started time")
            assert hover.get_attribute("title") == created["zeta"]
            assert hover.text.endswith(" ago"), hover.text
            ran = (parse_time(created["mid"]) - parse_time(created["zeta"])).total_seconds()  # type: ignore[operator]
            assert text_of(driver, f"{zeta} td.col-duration") == age_text(ran)
            assert driver.find_element(By.CSS_SELECTOR, f"{zeta} td.col-finished time").get_attribute(
                "title") == created["mid"]

            wait_for(lambda: clicked(driver, "#sort-name"), message="a click on the Name header")
            wait_for(lambda: row_names(driver)[:3] == ["alpha", "batch-0", "batch-1"],
                     message="the list sorted by name")
            assert driver.find_element(By.CSS_SELECTOR, "th.col-name").get_attribute("aria-sort") == "ascending"
            wait_for(lambda: clicked(driver, "#sort-name"), message="a second click on the Name header")
            wait_for(lambda: row_names(driver)[:1] == ["zeta"], message="the list sorted by name, the other way")

            driver.find_element(By.ID, "q").send_keys("permanent")
            driver.find_element(By.ID, "filter").click()
            wait_for(lambda: row_names(driver) == ["zeta"], message="only the job whose Why says permanent")

            driver.get(ui.url + "/?per=10")
            wait_for(lambda: len(row_names(driver)) == 10, message="a page of ten")
            wait_for(lambda: text_of(driver, "#job-count") == "TFJobs 1 to 10 of 12", message="page 1")
            wait_for(lambda: clicked(driver, "#page-next"), message="a click on next")
            wait_for(lambda: row_names(driver) == ["batch-1", "batch-0"], message="the last page: the two oldest")
            wait_for(lambda: text_of(driver, "#job-count") == "TFJobs 11 to 12 of 12", message="page 2")

            # At 800 px the Why column keeps its words on lines, not a character per line.
            driver.set_window_size(800, 900)
            driver.get(ui.url + "/?q=zeta")
            wait_for(lambda: live_part_updated(driver, "jobs"), message="the list updated live once")
            why = driver.find_element(By.CSS_SELECTOR, f"{zeta} td.why")
            # In view without scrolling, and wide enough for words.
            assert why.size["width"] >= 150 and why.location["x"] + why.size["width"] <= 800, (why.location, why.size)
            driver.save_screenshot(str(tmp_path / "job-list-800.png"))

            # The user's name and Log out on every page: a job's, and a refusal's.
            for path in (f"/namespaces/{namespace}/tfjobs/zeta", f"/namespaces/{namespace}/tfjobs/zeta/pods/none"):
                driver.get(ui.url + path)
                assert (text_of(driver, "#user"), text_of(driver, "header form button")) == (
                    f"system:serviceaccount:{namespace}:alice", "Log out"), path
            driver.find_element(By.CSS_SELECTOR, "header form button").click()  # Log out
            wait_for(lambda: driver.find_elements(By.ID, "token"), message="the login form after logging out")
            driver.find_element(By.ID, "token").send_keys(carol)
            driver.find_element(By.ID, "login").click()
            wait_for(lambda: text_of(driver, ".problem") == "You may not list TFJobs in any namespace.",
                     message="the refusal for a user with no rights")
            assert text_of(driver, "#status") == "403 Forbidden"
            assert text_of(driver, "#user") == f"system:serviceaccount:{namespace}:carol"
            print(f"screenshots: {tmp_path / 'job-list-800.png'}")
        except BaseException:
            keep_failed_page(driver, tmp_path)
            raise
        finally:
            driver.quit()
            ui.stop()


SELECT_WHY = """
const cell = document.querySelector(arguments[0]);
const range = document.createRange();
range.selectNodeContents(cell);
window.getSelection().removeAllRanges();
window.getSelection().addRange(range);
document.getElementById(arguments[1]).dataset.marker = "kept";
return window.getSelection().toString();
"""


def badge(driver: WebDriver) -> str:
    return text_of(driver, "#live-badge")


def test_live_updates_change_only_what_changed_and_say_why_they_stopped(
        cluster: LocalCluster, tfjob_crd: Path, kube_client: KubeClient, namespace: str, tmp_path: Path) -> None:
    """A reader's selection in one row survives another row's update (that row's element is not even replaced);
    the badge says live, then why the page stopped: the job deleted, the reader no longer allowed, the ui gone."""
    for name in ("steady", "moving", "doomed"):
        kube_client.create(TFJOBS, tfjob(name, Worker=replica()), namespace)
    kube_client.patch_status(TFJOBS, "steady", {"status": {"conditions": [
        {"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "steady is created and stays"}]}},
        namespace)
    token = reader_token(cluster, namespace, "alice")
    stopped = False
    with ui_identity(cluster, namespace, tmp_path) as kubeconfig:
        ui = UiServer(kubeconfig).start()
        driver = headless_chromium(tmp_path)
        try:
            driver.get(ui.url + "/login")
            driver.find_element(By.ID, "token").send_keys(token)
            driver.find_element(By.ID, "login").click()
            jobs = driver.find_element(By.ID, "jobs")
            wait_for(lambda: int(jobs.get_attribute("data-updates") or 0) >= 1 and badge(driver) == "live",
                     message="the list's first live update")
            steady = f"job:{namespace}/steady"
            selected = driver.execute_script(SELECT_WHY, f'tr.job[data-job="{namespace}/steady"] td.why', steady)
            assert selected == "steady is created and stays"
            driver.execute_script("document.getElementById(arguments[0]).dataset.marker = 'kept'",
                                  f"job:{namespace}/moving")
            kube_client.patch_status(TFJOBS, "moving", {"status": {"conditions": [
                {"type": "Running", "status": "True", "reason": "TFJobRunning", "message": "moving runs"}]}},
                namespace)
            moving = f'tr.job[data-job="{namespace}/moving"]'
            wait_for(lambda: "Running" in text_of(driver, moving), message="the list to show moving Running")
            assert driver.execute_script("return window.getSelection().toString()") == selected
            markers = driver.execute_script(
                "return [arguments[0], arguments[1]].map(id => document.getElementById(id).dataset.marker || '')",
                steady, f"job:{namespace}/moving")
            assert markers == ["kept", ""], markers  # steady's row untouched; moving's replaced

            driver.get(f"{ui.url}/namespaces/{namespace}/tfjobs/doomed")
            wait_for(lambda: badge(driver) == "live", message="the job page live")
            kube_client.delete(TFJOBS, "doomed", namespace)
            wait_for(lambda: badge(driver) == "deleted: this TFJob no longer exists",
                     message="the badge to say the job was deleted")
            driver.save_screenshot(str(tmp_path / "job-deleted.png"))

            driver.get(f"{ui.url}/namespaces/{namespace}/tfjobs/moving")
            wait_for(lambda: badge(driver) == "live", message="moving's page live")
            cluster.kubectl("delete", "rolebinding", "alice-reads", "-n", namespace)
            # A change for the page to render again (it renders at least every 30 s anyway).
            kube_client.patch_status(TFJOBS, "moving", {"status": {"replicaStatuses": {"Worker": {"active": 1}}}},
                                     namespace)
            wait_for(lambda: badge(driver) == "no longer allowed: you may no longer see this",
                     message="the badge to say the reader may no longer see the job")

            driver.get(ui.url + "/login")
            driver.find_element(By.ID, "token").send_keys(reader_token(cluster, namespace, "bob"))
            driver.find_element(By.ID, "login").click()
            driver.get(f"{ui.url}/namespaces/{namespace}/tfjobs/moving")
            wait_for(lambda: badge(driver) == "live", message="bob's page live")
            ui.stop()
            stopped = True
            wait_for(lambda: badge(driver) in ("reconnecting…", "stopped: reload to follow again"),
                     message="the badge to say the page lost the ui")
            print(f"badge once the ui stopped: {badge(driver)!r}; screenshot: {tmp_path / 'job-deleted.png'}")
        except BaseException:
            keep_failed_page(driver, tmp_path)
            raise
        finally:
            driver.quit()
            if not stopped:
                ui.stop()


OVERLAPPING_LABELS = """
const boxes = Array.from(document.querySelectorAll(arguments[0])).map(text => text.getBBox());
const overlaps = [];
boxes.forEach((a, i) => boxes.slice(i + 1).forEach(b => {
  if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) {
    overlaps.push([a.x, a.y, b.x, b.y]);
  }
}));
return [boxes.length, overlaps];
"""


def unplaced_pod(job: str, index: int) -> dict[str, object]:
    """A pod of the job as tfop would label it, that no node will take (no operator or kubelet runs here)."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{job}-worker-{index}", "labels": {
        "training.kubeflow.org/job-name": job, "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": str(index)}},
        "spec": {"nodeSelector": {"tfop.kubeflow.org/test-nowhere": "true"},
                 "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow"}]}}


def gone_pod_event(job: dict[str, object], namespace: str) -> dict[str, object]:
    """An event about a pod of the job that is no longer there (the apiserver keeps events for an hour)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    meta = job["metadata"]
    assert isinstance(meta, dict)
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "gone-pod-probe", "namespace": namespace},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": f"{meta['name']}-worker-7",
                               "namespace": namespace, "uid": "gone"},
            "type": "Warning", "reason": "Evicted", "message": "an event of a deleted pod",
            "source": {"component": "kubelet"}, "firstTimestamp": now, "lastTimestamp": now, "count": 1}


def trainer_status(loss: str, updated: str) -> dict[str, object]:
    eta = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 600))
    return {"status": {"trainerStatus": {
        "progressPercentage": 45, "estimatedCompletionTime": eta, "currentEpoch": 4, "totalEpochs": 10,
        "metrics": [{"name": "loss", "value": loss}], "lastUpdatedTime": updated, "reportedBy": "trained-worker-0"}}}


def test_the_job_page_summarizes_replicas_failures_and_progress(cluster: LocalCluster, tfjob_crd: Path,
                                                                kube_client: KubeClient, namespace: str,
                                                                tmp_path: Path) -> None:
    """Above the replica table: the pods by phase, the last failure, progress with its ETA and a loss chart from
    two reports; an event of a pod no longer there is listed; conditions at one moment get labels that do not
    overlap. No operator runs: the test writes the pods and the status the operator and kubelet would."""
    job = kube_client.create(TFJOBS, tfjob("trained", Worker=replica(3)), namespace)
    for index in range(3):
        kube_client.create(PODS, unplaced_pod("trained", index), namespace)
    exit_pod(kube_client, namespace, "trained-worker-2", 1)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kube_client.patch_status(TFJOBS, "trained", {"status": {"startTime": now, "conditions": [
        {"type": name, "status": "True", "reason": f"TFJob{name}", "message": "", "lastTransitionTime": now}
        for name in ("Created", "Running")]}}, namespace)
    earlier = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 30))
    kube_client.patch_status(TFJOBS, "trained", trainer_status("0.9", earlier), namespace)
    kube_client.create(EVENTS, gone_pod_event(job, namespace), namespace)
    token = reader_token(cluster, namespace, "alice")
    with ui_identity(cluster, namespace, tmp_path) as kubeconfig:
        ui = UiServer(kubeconfig).start()
        driver = headless_chromium(tmp_path)
        try:
            wait_for(lambda: ui.cache.metric_history(namespace, "trained"), message="the ui to see the first report")
            kube_client.patch_status(TFJOBS, "trained", trainer_status("0.5", now), namespace)
            driver.get(ui.url + "/login")
            driver.find_element(By.ID, "token").send_keys(token)
            driver.find_element(By.ID, "login").click()
            driver.get(f"{ui.url}/namespaces/{namespace}/tfjobs/trained")
            wait_for(lambda: live_part_updated(driver, "job-live") and driver.find_elements(
                By.CSS_SELECTOR, 'figure.chart[data-metric="loss"] polyline'), message="the loss chart of two reports")
            assert text_of(driver, "#replica-phases") == "worker 2 Pending, 1 Failed"
            failures = texts_of(driver, "#last-failures tr.failure")
            assert len(failures) == 1 and failures[0].startswith("worker-2 trained-worker-2 1 Error (permanent) "), \
                failures
            assert text_of(driver, "#progress-percent") == "45 %"
            eta = text_of(driver, "#progress-eta")
            assert eta.startswith("ETA in "), eta
            assert "loss 0.5" in text_of(driver, "#progress")
            assert "an event of a deleted pod" in texts_of(driver, "tr.event td.message")
            count, overlaps = driver.execute_script(OVERLAPPING_LABELS, "#timeline g.condition text")
            assert count == 2 and overlaps == [], overlaps
            driver.save_screenshot(str(tmp_path / "job-summary.png"))
            print(f"screenshot: {tmp_path / 'job-summary.png'}")
        except BaseException:
            keep_failed_page(driver, tmp_path)
            raise
        finally:
            driver.quit()
            ui.stop()
