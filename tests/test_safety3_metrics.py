"""Issue 36: the scalars of a job read boundedly (high 5), a report that hides ``--env``
values (high 6), and event files, tags and values that are hostile (medium)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from safety3_jobs import record_bytes, recorded_job, scalar_events, tfjob, write_events
from tfjob.after import metrics as metrics_module
from tfjob.after.metrics import read_metrics

from tensorboard.compat.proto import event_pb2

MILLION = 1_000_000


def test_a_million_points_are_read_boundedly_and_the_reading_says_so(tmp_path: Path, tfjob_exe: str) -> None:
    home, job_dir = tmp_path / "home", tmp_path / "out"
    write_events(
        job_dir / "logs" / "train" / "events.out.tfevents.1.host", scalar_events((s, "loss", 1.0 / (s + 1)) for s in range(MILLION))
    )
    job = recorded_job(home, str(job_dir))
    out = tfjob(tfjob_exe, home, "metrics", job, "--json")
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads(out.stdout)
    # The last point is always read; the note says how much of the file was.
    assert data["final"] == {"train": {"loss": pytest.approx(1.0 / MILLION)}}
    assert f"holds {MILLION + 1} records: {metrics_module.MAX_RECORDS} of them were read" in data["note"]
    assert f"{metrics_module.MAX_RECORDS} of them were read" in out.stderr
    points = data["series"]["train"]["loss"]
    assert len(points) <= metrics_module.MAX_POINTS and points[-1][0] == MILLION - 1
    status = json.loads(tfjob(tfjob_exe, home, "status", job, "--json").stdout)
    assert status["metrics"] == {"train": {"loss": pytest.approx(1.0 / MILLION)}} and "were read" in status["metrics_note"]


def test_every_file_shares_one_budget_of_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_module, "MAX_RECORDS", 3000)
    for run in ("a", "b", "c"):
        write_events(tmp_path / run / "events.out.tfevents.1.h", scalar_events((s, "loss", float(s)) for s in range(5000)))
    decoded = 0
    real = event_pb2.Event.FromString

    def counted(data: bytes) -> event_pb2.Event:
        nonlocal decoded
        decoded += 1
        return real(data)

    monkeypatch.setattr(event_pb2.Event, "FromString", counted)
    m = read_metrics("j", str(tmp_path))
    assert decoded <= 3000
    assert {run: tags["loss"][-1].step for run, tags in m.series.items()} == {"a": 4999, "b": 4999, "c": 4999}
    assert m.note.count("were read (evenly spaced, with the last)") == 3


def test_a_report_hides_env_values(tmp_path: Path, tfjob_exe: str) -> None:
    home = tmp_path / "home"
    secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
    job = recorded_job(
        home, None, env={"AWS_SECRET_ACCESS_KEY": secret, "DB_PASSWORD": "hunter2-hunter2"},
        pools=[{"role": "chief", "replicas": 1, "env": {"POOL_TOKEN": "pool-secret-value"}}],
    )  # fmt: skip
    page = tmp_path / "r.html"
    out = tfjob(tfjob_exe, home, "report", job, "-o", str(page))
    assert out.returncode == 0, out.stderr[-3000:]
    text = page.read_text()
    for value in (secret, "hunter2-hunter2", "pool-secret-value"):
        assert value not in text
    assert "AWS_SECRET_ACCESS_KEY" in text and "POOL_TOKEN" in text and "(value not shown)" in text


@pytest.mark.parametrize(
    "damage",
    ["bad-proto", "length-2**63", "length-2**62", "cut-short", "garbage", "bad-checksum"],
)
def test_a_damaged_event_file_is_read_up_to_the_damage_and_said(tmp_path: Path, tfjob_exe: str, damage: str) -> None:
    home, job_dir = tmp_path / "home", tmp_path / "out"
    good = list(scalar_events((s, "loss", 1.0 / (s + 1)) for s in range(5)))
    bad = {
        "bad-proto": record_bytes(b"\xff\xff\xff\xff\xff\xff"),  # valid checksums, no Event
        "length-2**63": record_bytes(b"", length=2**63),
        "length-2**62": record_bytes(b"", length=2**62),
        "cut-short": good[1][:-7],
        "garbage": b"\x00" * 3,
        "bad-checksum": good[1][:-5] + bytes([good[1][-5] ^ 0x20]) + good[1][-4:],  # a bit of the value flipped
    }[damage]
    write_events(job_dir / "logs" / "events.out.tfevents.1.h", [*good, bad, *good[1:]])
    job = recorded_job(home, str(job_dir))
    for args in (["metrics", job], ["metrics", job, "--json"], ["status", job, "--json"], ["report", job, "-o", str(tmp_path / "r.html")]):
        out = tfjob(tfjob_exe, home, *args)
        assert out.returncode == 0, (args, out.stderr[-3000:])
        assert "Traceback" not in out.stderr and "Error" not in out.stderr, out.stderr[-3000:]
    data = json.loads(tfjob(tfjob_exe, home, "metrics", job, "--json").stdout)
    assert data["final"] == {".": {"loss": pytest.approx(1.0 / 5)}}
    assert any(said in data["note"] for said in ("damaged or unfinished", "is not a TensorBoard event", "fails its checksum")), data["note"]
    if damage == "bad-checksum":
        assert "fails its checksum" in data["note"], data["note"]


def test_a_diverged_loss_is_valid_json(tmp_path: Path, tfjob_exe: str) -> None:
    home, job_dir = tmp_path / "home", tmp_path / "out"
    points = [(1, "loss", math.nan), (1, "inf", math.inf), (1, "ninf", -math.inf), (1, "ok", 0.5)]
    write_events(job_dir / "logs" / "events.out.tfevents.1.h", scalar_events(points))
    job = recorded_job(home, str(job_dir))
    for args in (["metrics", job, "--json"], ["status", job, "--json"]):
        out = tfjob(tfjob_exe, home, *args)
        assert out.returncode == 0, out.stderr[-3000:]
        assert "NaN" not in out.stdout and "Infinity" not in out.stdout
        data = json.loads(out.stdout, parse_constant=lambda word: pytest.fail(f"{word} is not JSON"))
        final = data["final"] if "final" in data else data["metrics"]
        assert final == {".": {"inf": None, "loss": None, "ninf": None, "ok": 0.5}}


@pytest.mark.parametrize("tag", ["loss$x", "$\\frac{a}{$", "cost $\\alpha$ $", "a\\$b"])
def test_a_tag_with_dollars_is_drawn_as_text(tmp_path: Path, tfjob_exe: str, tag: str) -> None:
    home, job_dir = tmp_path / "home", tmp_path / "out"
    write_events(job_dir / f"logs/run${tag[:3]}/events.out.tfevents.1.h", scalar_events((s, tag, float(s)) for s in range(3)))
    job = recorded_job(home, str(job_dir))
    out = tfjob(tfjob_exe, home, "metrics", job, "--plot", str(tmp_path / "m.svg"))
    assert out.returncode == 0, out.stderr[-3000:]
    out = tfjob(tfjob_exe, home, "report", job, "-o", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "<svg" in (tmp_path / "r.html").read_text()


def test_a_study_whose_names_hold_dollars_is_drawn(tmp_path: Path) -> None:
    from tfjob.after.metrics import figure_svg, study_figure

    extra = {
        "study": {"metric": {"tag": "acc$uracy", "goal": "MAXIMIZE"}},
        "trials": [{"id": str(i), "metric": 0.1 * i, "params": {"opt$": f"$a{i}$\\b", "lr$x": 0.1 * i}} for i in range(1, 4)],
    }
    assert "<svg" in figure_svg(study_figure(extra))


def test_a_thousand_tags_draw_a_bounded_figure(tmp_path: Path) -> None:
    from tfjob.after.metrics import MAX_PANELS, metrics_figure, save_figure

    points = [(s, f"tag{t:04d}", float(s)) for t in range(1000) for s in range(2)]
    write_events(tmp_path / "events.out.tfevents.1.h", scalar_events(points))
    m = read_metrics("j", str(tmp_path))
    assert len(m.series["."]) == 1000
    fig = metrics_figure(m)
    assert len([ax for ax in fig.axes if ax.get_visible()]) == MAX_PANELS
    assert f"{1000 - MAX_PANELS} more not drawn" in fig._suptitle.get_text()
    save_figure(fig, str(tmp_path / "m.png"))
