"""A job's timeline, laid out for SVG: a row per replica, each of its pods drawn from created (waiting) to
running to ended, its restarts in place and its exits marked with their codes (also the exit that made tfop recreate
a replica's pod, from the job's status, when this process did not see that pod), and the job's conditions and its
happenings (node-loss replacements, restarts together, resizes: happenings.py) as vertical markers.
Pure geometry: the template draws what this computes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from tfop.api.constants import LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from tfop.api.exit_codes import classify_termination
from tfop.api.timestamps import parse_time
from tfop.objects import Object
from tfop.ui.views.happenings import Happening
from tfop.ui.views.job_page import RecreatedExit, main_container_status, replica_order

LABEL_WIDTH = 140  # the replica names left of the plot
PLOT_WIDTH = 760
RIGHT_MARGIN = 80  # room for the last condition's label and an exit code at the end
ROW_HEIGHT = 22
BAR_HEIGHT = 12
AXIS_HEIGHT = 34  # the time axis above the rows, and room for the condition labels
HAPPENING_HEIGHT = 18  # the band below the rows that labels the happenings
TICK_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)
MAX_TICKS = 8
LANE_HEIGHT = 13  # a line of labels: conditions above the rows, happenings below
CHAR_WIDTH = 6.5  # an 11 px label's average character, to tell where it ends
LABEL_GAP = 4
# The page draws a live job's timeline to now in steps of this: a live update resends the timeline when the job's
# pods change or a step passes, not on every change anywhere in the cluster.
NOW_STEP_SECONDS = 30


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    css_class: str  # waiting or running
    title: str


@dataclass(frozen=True)
class Marker:
    x: float
    y: float
    label: str
    css_class: str  # exit-permanent, exit-retryable, exit-succeeded, condition, or a happening's kind
    title: str


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class Timeline:
    width: int
    height: int
    rows: tuple[tuple[float, str], ...]  # (y of the row's text, the replica)
    bars: tuple[Bar, ...]
    markers: tuple[Marker, ...]
    conditions: tuple[Marker, ...]
    ticks: tuple[Tick, ...]
    happenings: tuple[Marker, ...] = ()  # drawn below the rows, their label there


@dataclass(frozen=True)
class PodSpan:
    """When one pod was created, began running and ended, and the exits the kubelet reported for it."""

    replica: str
    name: str
    created: datetime
    running: datetime | None
    ended: datetime | None
    exits: tuple[tuple[datetime, int, str], ...]  # (when, code, reason), oldest first


def _terminated(state: object) -> dict[str, object] | None:
    found = state.get("terminated") if isinstance(state, dict) else None
    return found if isinstance(found, dict) else None


def pod_span(pod: Object) -> PodSpan | None:
    meta = pod.get("metadata") or {}
    created = parse_time(meta.get("creationTimestamp"))
    if created is None:
        return None
    labels = meta.get("labels") or {}
    replica = f"{labels.get(LABEL_REPLICA_TYPE, '?')}-{labels.get(LABEL_REPLICA_INDEX, '?')}".lower()
    status = main_container_status(pod)
    starts, exits = [], []
    ended = None
    for key in ("lastState", "state"):  # the run before the restart in place, then the current one
        state = status.get(key) or {}
        running = state.get("running") if isinstance(state, dict) else None
        if isinstance(running, dict):
            starts.append(parse_time(running.get("startedAt")))
        terminated = _terminated(state)
        if terminated is not None:
            starts.append(parse_time(terminated.get("startedAt")))
            finished = parse_time(terminated.get("finishedAt"))
            if finished is not None and isinstance(terminated.get("exitCode"), int):
                exits.append((finished, int(str(terminated["exitCode"])), str(terminated.get("reason", ""))))
            if key == "state":
                ended = finished
    known_starts = [start for start in starts if start is not None]
    running_since = min(known_starts) if known_starts else parse_time((pod.get("status") or {}).get("startTime"))
    if ended is None and meta.get("deletionTimestamp"):
        ended = parse_time(meta.get("deletionTimestamp"))
    return PodSpan(replica, str(meta.get("name", "")), created, running_since, ended,
                   tuple(sorted(exits, key=lambda exit_: exit_[0])))


def label_lanes(starts: Sequence[tuple[float, str]]) -> list[int]:
    """The line each label goes on, so that no two overlap: labels start at their x (in the order given, which is
    by x), each on the first line whose last label ends before it."""
    ends: list[float] = []
    lanes = []
    for x, label in starts:
        lane = next((index for index, end in enumerate(ends) if end + LABEL_GAP <= x), len(ends))
        if lane == len(ends):
            ends.append(0.0)
        ends[lane] = x + 2 + len(label) * CHAR_WIDTH
        lanes.append(lane)
    return lanes


def tick_step(seconds: float) -> int:
    """The smallest step of TICK_STEPS that puts at most MAX_TICKS ticks on `seconds`."""
    return next((step for step in TICK_STEPS if seconds / step <= MAX_TICKS), TICK_STEPS[-1])


def layout(pods: Iterable[Object], conditions: Iterable[Object], now: datetime,
           happenings: Iterable[Happening] = (),
           recreated: Mapping[tuple[str, str], RecreatedExit] | None = None) -> Timeline:
    """`recreated` (job_page.recreated_exits): exits marked on their replica's row unless a pod drawn there shows
    the same exit; a replica with no pod drawn has no row for them."""
    ordered = sorted(pods, key=replica_order)
    spans = [span for span in map(pod_span, ordered) if span is not None]
    shown = {(span.replica, moment, code) for span in spans for moment, code, _ in span.exits}
    drawn = {span.replica for span in spans}
    unseen = [(replica, kept.finished, kept) for kept in (recreated or {}).values()
              for replica in [f"{kept.replica_type}-{kept.index}"]
              if kept.finished is not None and replica in drawn and (replica, kept.finished, kept.code) not in shown]
    marks = [(moment, str(c.get("type", ""))) for c in conditions if isinstance(c, dict) and c.get("status") == "True"
             for moment in [parse_time(c.get("lastTransitionTime"))] if moment is not None]
    told = list(happenings)
    moments = ([span.created for span in spans] + [moment for moment, _ in marks] + [h.moment for h in told]
               + [moment for _, moment, _ in unseen])
    start = min(moments, default=now)
    end = max([now, *moments])
    # Seconds precision: an instant job would have no width.
    end = max(end, start + timedelta(seconds=10))
    scale = PLOT_WIDTH / (end - start).total_seconds()

    def x_of(moment: datetime) -> float:
        return round(LABEL_WIDTH + (moment - start).total_seconds() * scale, 1)

    marks.sort(key=lambda mark: mark[0])
    told.sort(key=lambda happening: happening.moment)
    condition_lanes = label_lanes([(x_of(moment), name) for moment, name in marks])
    top = AXIS_HEIGHT + max([0, *condition_lanes]) * LANE_HEIGHT
    replicas = list(dict.fromkeys(span.replica for span in spans))
    row_y = {replica: top + index * ROW_HEIGHT for index, replica in enumerate(replicas)}
    bars: list[Bar] = []
    markers: list[Marker] = []
    for span in spans:
        y = row_y[span.replica] + (ROW_HEIGHT - BAR_HEIGHT) / 2
        finish = span.ended or now
        waited_until = span.running or finish
        if waited_until > span.created:
            bars.append(Bar(x_of(span.created), y, round(x_of(waited_until) - x_of(span.created), 1), "waiting",
                            f"{span.name} waiting from {span.created:%H:%M:%S}"))
        if span.running is not None and finish >= span.running:
            bars.append(Bar(x_of(span.running), y, max(1.0, round(x_of(finish) - x_of(span.running), 1)), "running",
                            f"{span.name} running from {span.running:%H:%M:%S}"))
        for moment, code, reason in span.exits:
            exit_class = classify_termination(code, reason).value.lower()
            markers.append(Marker(x_of(moment), y, str(code), f"exit-{exit_class}",
                                  f"{span.name} exited {code}{' ' + reason if reason else ''} at {moment:%H:%M:%S}"))
    for replica, moment, kept in unseen:
        exit_class = classify_termination(kept.code, kept.reason).value.lower()
        reason = f" {kept.reason}" if kept.reason else ""
        markers.append(Marker(x_of(moment), row_y[replica] + (ROW_HEIGHT - BAR_HEIGHT) / 2, str(kept.code),
                              f"exit-{exit_class}",
                              f"{replica} exited {kept.code}{reason} at {moment:%H:%M:%S}; tfop recreated its pod"))
    rows_bottom = top + max(1, len(replicas)) * ROW_HEIGHT
    happening_lanes = label_lanes([(x_of(h.moment), h.label) for h in told])
    happening_markers = tuple(Marker(x_of(h.moment), rows_bottom + 12 + lane * LANE_HEIGHT, h.label, h.kind,
                                     f"{h.label} at {h.moment:%H:%M:%S}: {h.reason}")
                              for h, lane in zip(told, happening_lanes, strict=True))
    height = rows_bottom + (HAPPENING_HEIGHT + max(happening_lanes) * LANE_HEIGHT if told else 0)
    # A condition's line starts under its label, whose line is counted down from the rows' top.
    condition_markers = tuple(Marker(x_of(moment), top - 4 - (max([0, *condition_lanes]) - lane) * LANE_HEIGHT,
                                     name, "condition", f"{name} at {moment:%H:%M:%S}")
                              for (moment, name), lane in zip(marks, condition_lanes, strict=True))
    step = tick_step((end - start).total_seconds())
    first = start.timestamp() // step * step + step
    tick_moments = [datetime.fromtimestamp(t, start.tzinfo) for t in _range(first, end.timestamp(), step)]
    ticks = tuple(Tick(x_of(moment), f"{moment:%H:%M:%S}") for moment in tick_moments)
    return Timeline(LABEL_WIDTH + PLOT_WIDTH + RIGHT_MARGIN, height,
                    tuple((row_y[replica] + ROW_HEIGHT / 2 + 4, replica) for replica in replicas),
                    tuple(bars), tuple(markers), condition_markers, ticks, happening_markers)


def _range(first: float, last: float, step: int) -> list[float]:
    values = []
    value = first
    while value <= last:
        values.append(value)
        value += step
    return values


def stepped_now(now: datetime) -> datetime:
    return datetime.fromtimestamp(now.timestamp() // NOW_STEP_SECONDS * NOW_STEP_SECONDS, now.tzinfo)
