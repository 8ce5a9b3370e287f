"""``alfred bench …`` runs end to end, at tiny sizes, and reports figures that add up.

These tests check that each benchmark works and that its figures are consistent with
what it did (never how fast anything was: speed is for people to read off a real run).
Each runs as a real process, as an operator would start it, on embedded servers in a
temporary folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


#: How long one bench run may take (the subprocess is killed after it). The fault drills
#: kill and restart servers and take about 65 s on a quiet 2-core machine; a test that
#: runs one is marked with :data:`SLOW` so pytest's own guard (120 s) does not fire first.
BENCH_TIMEOUT_S = 240
SLOW = pytest.mark.timeout(BENCH_TIMEOUT_S + 30)


#: What every timing bench reads of the machine beside its figures.
MACHINE_READINGS = ("python_loop_ms", "database_ping_ms", "database_insert_ms")


def assert_loop_spread(machine: dict[str, Any], rounds: int) -> None:
    """The machine's own spread: the loop timed once after each timed item."""
    run = machine["python_loop_run_ms"]
    assert run["rounds"] == rounds, run
    assert 0 < run["p50"] <= run["p95"] <= run["p99"], run
    assert run["p95_over_p50"] == pytest.approx(run["p95"] / run["p50"], abs=0.001)


def bench(tmp_path: Path, *args: str, expect: int = 0) -> tuple[dict[str, Any] | None, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "ALFRED_DATA_DIR": str(tmp_path / "data"),
        "PYTHONPATH": str(ROOT),
        "PTB_TIMEDELTA": "1",
        "MEM0_TELEMETRY": "False",
    }
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "bench", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=BENCH_TIMEOUT_S,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == expect, done.stdout + done.stderr
    if expect != 0 or "--json" not in args:
        return None, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_bench_bot(tmp_path: Path) -> None:
    result, _ = bench(tmp_path, "bot", "--sizes", "60", "--messages", "4", "--json")
    assert result is not None and result["messages"] == 4
    figures = result["by_facts"]["60"]
    assert figures["messages"] == 4 and figures["per_second"] > 0
    for q in ("p50", "p95", "p99"):
        assert 0 < figures["overhead_ms"][q] <= figures["total_ms"][q]
        assert 0 < figures["model_client_ms"][q] <= figures["total_ms"][q]
        # the replies journaled once they are out: timed, counted, not in the overhead
        assert 0 < figures["after_reply_ms"][q] <= figures["total_ms"][q]
    # the first reply, which builds the search index, is reported apart from the others
    assert figures["first_reply_ms"] > 0
    ops = figures["database_ops_per_message"]
    # every message is journaled and the reply too: at least two inserts per message
    assert ops["by_command"]["insert"] >= 2 and ops["writes"] >= 2
    assert ops["reads"] >= 1
    assert ops["reads"] + ops["writes"] + ops["other"] == sum(ops["by_command"].values())
    # every request to MongoDB or Redis is a round trip (issue 17: at most 8 a message)
    assert ops["round_trips"] == pytest.approx(
        sum(ops["by_command"].values()) + ops["redis"], abs=0.05
    )
    assert ops["round_trips"] <= 8
    assert figures["fact_document_bytes"] > 384 * 4  # a float32 vector alone is 1,536 bytes
    assert figures["peak_rss_mb"] > 50
    # serving is counted from the first message on (the kernel's peak count restarted)
    assert figures["serving_peak_rss_mb"] is not None and figures["serving_peak_rss_mb"] > 50
    # the machine's speed, read in the same run, so figures of two days can be compared
    assert all(figures["machine"][k] > 0 for k in MACHINE_READINGS), figures["machine"]
    assert_loop_spread(figures["machine"], rounds=4)


def test_bench_formation_direct_and_through_the_jobs(tmp_path: Path) -> None:
    for via in ("service", "jobs"):
        args = ("formation", "-n", "3", "--messages", "12", "--json")
        result, _ = bench(tmp_path, *args, *(["--via-jobs"] if via == "jobs" else []))
        assert result is not None and result["via"] == via
        assert result["formations"] == 3 and result["skipped"] == 0
        assert result["messages_per_formation"] == 12
        assert 1 <= result["llm_calls_per_formation"]["mean"] <= 3
        assert result["llm_calls_per_formation"]["max"] <= 3  # the formation budget
        assert result["tokens_per_formation"]["mean"] > 0
        assert result["facts_per_formation"]["mean"] > 0
        ops = result["database_ops_per_formation"]
        assert ops["reads"] > 0 and ops["writes"] > 0
        assert result["peak_rss_mb"] > 50


def test_bench_formation_with_model_latency_and_storage(tmp_path: Path) -> None:
    args = ("formation", "-n", "2", "--messages", "8", "--model-latency", "40", "--json")
    result, _ = bench(tmp_path, *args)
    assert result is not None and result["model_latency_ms"] == 40.0
    assert result["formations"] == 2 and result["skipped"] == 0
    calls = result["llm_calls_per_formation"]["mean"] * result["formations"]
    assert calls >= 2
    # every chat answer waited 40 ms and a formation's calls run one after another, so
    # the formations took at least that long in all (a lower bound the fake guarantees)
    assert result["seconds"]["total"] >= calls * 0.040
    storage = result["storage"]
    assert storage["messages_journaled"] == 2 * 8
    assert storage["total_bytes"] == sum(storage["bytes_by_collection"].values())
    assert storage["bytes_by_collection"]["messages"] > 0
    assert storage["bytes_by_collection"]["memory_facts"] > storage["embedding_dims"] * 4
    assert storage["bytes_per_message"] == round(storage["total_bytes"] / 16, 1)


def test_bench_retrieval(tmp_path: Path) -> None:
    result, _ = bench(tmp_path, "retrieval", "--facts", "150", "--queries", "6", "--json")
    assert result is not None
    assert result["facts"] == 150 and result["queries"] == 6
    assert result["backend"] == "application"
    assert result["queries_with_results"] == 6
    assert "mem0" not in result and "floor" not in result, "no comparison unless asked"
    latency = result["latency_ms"]
    assert 0 < latency["p50"] <= latency["p95"] <= latency["p99"]
    after = result["after_change_ms"]  # the search that first catches up with a change
    assert 0 < after["p50"] <= after["max"]
    assert all(result["machine"][k] > 0 for k in MACHINE_READINGS), result["machine"]
    assert_loop_spread(result["machine"], rounds=6)


def test_bench_retrieval_compares_mem0_and_the_floor(tmp_path: Path) -> None:
    args = ("retrieval", "--facts", "200", "--queries", "12", "--compare", "mem0", "--json")
    result, _ = bench(tmp_path, *args)
    assert result is not None
    assert result["compare"] == "mem0" and result["facts"] == 200 and result["queries"] == 12
    assert result["others"] == 180, "the viewer's 200 among 380 (10 of every 19)"
    assert result["backend"] == "application"
    assert result["threads"]["faiss"] >= 1 and result["threads"]["cpus"] >= 1
    mem0, floor = result["mem0"], result["floor"]
    assert mem0["store"] == "faiss"
    assert mem0["memories"] == 380 and mem0["viewer_memories"] == floor["vectors"] == 200
    # every timed mem0 search embedded its own query; nothing went beyond this machine
    assert mem0["query_embeddings"] == 12
    assert mem0["network_attempts"] == 0
    for figures in (result, mem0, floor):
        latency = figures["latency_ms"]
        assert 0 < latency["p50"] <= latency["p95"] <= latency["p99"]
    for share in (result["recall_vs_exact"], result["dense_recall_vs_exact"]):
        assert 0.0 <= share <= 1.0
    assert 0.0 <= mem0["recall_vs_exact"] <= 1.0
    assert 0 <= mem0["returned"]["min"] <= mem0["returned"]["mean"] <= 10
    # the floor scans exactly the viewer's vectors, and Alfred's dense leg sees them all
    assert floor["recall_vs_exact"] == 1.0
    assert result["dense_recall_vs_exact"] == 1.0
    assert result["queries_with_results"] == 12
    # in a reply turn (its reads served by the turn's memory read, timed apart) the
    # search finds exactly what it finds alone
    in_turn = result["in_turn"]
    for latency in (in_turn["latency_ms"], in_turn["snapshot_ms"]):
        assert 0 < latency["p50"] <= latency["p95"] <= latency["p99"]
    assert in_turn["recall_vs_exact"] == result["recall_vs_exact"]
    assert_loop_spread(result["machine"], rounds=12)  # once after each query's round


def test_bench_retrieval_plots_the_comparison(tmp_path: Path) -> None:
    png = tmp_path / "retrieval.png"
    args = ("retrieval", "--plot", str(png), "--sizes", "60", "--queries", "3", "--compare")
    result, _ = bench(tmp_path, *args, "mem0", "--json")
    assert result is not None and result["plot"] == str(png)
    assert [point["facts"] for point in result["series"]] == [60]
    assert result["series"][0]["mem0"]["memories"] == 60 + 54
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _locomo_file(path: Path) -> Path:
    """A two-session conversation in the LoCoMo layout, with one question per fact."""
    said = [
        ("Ana", "I adopted a grey cat called Pixel last spring"),
        ("Ben", "My brother works as a lighthouse keeper in Norway"),
        ("Ana", "I am training for the Lisbon marathon in October"),
        ("Ben", "We painted the kitchen yellow over the weekend"),
    ]
    sessions: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for n, pair in ((1, said[:2]), (2, said[2:])):
        sessions[f"session_{n}_date_time"] = f"1:00 pm on {n} May, 2023"
        sessions[f"session_{n}"] = [
            {"speaker": who, "text": text, "dia_id": f"D{n}:{i + 1}"}
            for i, (who, text) in enumerate(pair)
        ]
    questions = [
        ("What is the name of Ana's cat?", "D1:1"),
        ("Where does Ben's brother work?", "D1:2"),
        ("Which marathon is Ana training for?", "D2:1"),
        ("What colour did they paint the kitchen?", "D2:2"),
    ]
    qa = [{"question": q, "answer": "-", "evidence": [e], "category": 1} for q, e in questions]
    qa.append({"question": "adversarial", "answer": "-", "evidence": ["D1:1"], "category": 5})
    sample = {"sample_id": "tiny", "conversation": sessions, "qa": qa}
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def test_bench_locomo(tmp_path: Path) -> None:
    data = _locomo_file(tmp_path / "locomo.json")
    result, _ = bench(
        tmp_path, "locomo", "--data", str(data), "--conversations", "0", "--k", "1,4", "--json"
    )
    assert result is not None
    assert result["questions"] == 4, "category 5 is not scored"
    recall = {int(k): v for k, v in result["recall"].items()}
    # four turns in all: with k = 4 every evidence turn is among the results
    assert recall[4] == 1.0
    # each question names its turn's own words: the first result is the right turn
    assert recall[1] >= 0.75
    # one conversation, number 0: its figures are those of the half 0-1, and there is
    # no 2-4 half to report
    assert result["by_conversation"] == {"0": result["recall"]}
    assert result["by_half"] == {"0-1": result["recall"]}
    assert result["turn_context"] is True


def test_bench_locomo_without_its_data_says_so(tmp_path: Path) -> None:
    _, output = bench(tmp_path, "locomo", "--data", str(tmp_path / "missing.json"), expect=2)
    assert "no data file" in output and "--data" in output
    for name, text in (("bad.json", "{not json"), ("shape.json", '[{"qa": []}]')):
        (tmp_path / name).write_text(text, encoding="utf-8")
        _, output = bench(tmp_path, "locomo", "--data", str(tmp_path / name), expect=2)
        assert "is not a LoCoMo" in output, output


def test_bench_telegram_busy_group_then_dm(tmp_path: Path) -> None:
    # One update at a time, the DM comes after every group answer: the old head-of-line.
    args = ("telegram", "--mentions", "3", "--concurrency", "1", "--json")
    result, _ = bench(tmp_path, *args)
    assert result is not None and result["mentions"] == 3 and result["concurrency"] == 1
    assert result["dm_behind_group_answers"] == 3
    assert result["dm_answer_s"] > 0 and result["group_s"] > 0
    # figures rounded to the millisecond: the pace agrees with the time to within 1 %
    assert result["group_per_minute"] == pytest.approx(3 / result["group_s"] * 60, rel=0.01)
    _, summary = bench(tmp_path, "telegram", "--mentions", "3")
    assert "the DM behind 3 group mentions was answered in" in summary


@SLOW
def test_bench_faults_runs_the_drills_and_loses_nothing(tmp_path: Path) -> None:
    # kill-worker needs formations, hence more traffic than this: it has its own test.
    drills = "kill-mongo,kill-redis,model-errors,model-garbage,model-hang"
    args = ("faults", "--drills", drills, "--messages", "9", "--senders", "3", "--json")
    result, _ = bench(tmp_path, *args, "--interval", "0.05")
    assert result is not None
    drills = {d["name"]: d for d in result["drills"]}
    assert list(drills) == [
        "kill-mongo",
        "kill-redis",
        "model-errors",
        "model-garbage",
        "model-hang",
    ]
    for name, d in drills.items():
        assert set(d) >= {"name", "sent", "confirmed", "stored", "lost", "duplicated", "recovery_s"}
        assert d["sent"] == 9 and d["after_fault"] == 6, name
        assert d["confirmed"] == d["stored"] == 9, name
        assert d["lost"] == 0 and d["duplicated"] == 0, name
        assert d["recovery_s"] is not None, name
        # a server was restarted by its supervisor only where one was killed
        assert (d["server_restart_s"] is not None) == name.startswith("kill-"), name


@SLOW
def test_bench_faults_kills_the_worker_mid_formation(tmp_path: Path) -> None:
    args = ("faults", "--drills", "kill-worker", "--messages", "24", "--senders", "2")
    result, _ = bench(tmp_path, *args, "--interval", "0.05", "--timeout", "150", "--json")
    assert result is not None
    (drill,) = result["drills"]
    assert drill["name"] == "kill-worker" and drill["worker_killed"] is True
    assert drill["sent"] == drill["confirmed"] == drill["stored"] == 24
    assert drill["lost"] == 0 and drill["duplicated"] == 0
    # the formation it was killed in, and the others, were formed by the next worker
    assert drill["formations_done"] >= 1 and drill["formations_open"] == 0
    assert drill["recovery_s"] is not None


@SLOW
def test_bench_faults_model_faults_in_formation_and_a_busy_group(tmp_path: Path) -> None:
    drills = "formation-garbage,busy-group"
    args = ("faults", "--drills", drills, "--messages", "30", "--senders", "2", "--json")
    result, _ = bench(tmp_path, *args, "--interval", "0.05", "--mentions", "3")
    assert result is not None
    garbage, busy = result["drills"]
    assert garbage["name"] == "formation-garbage" and busy["name"] == "busy-group"
    # formation was answered with garbage, and still nothing was marked formed unread
    assert garbage["model_faults_served"] >= 1
    assert garbage["formed_unlearned"] == 0 and garbage["set_aside"] == 0
    assert garbage["sent"] == garbage["confirmed"] == garbage["stored"] == 30
    assert garbage["lost"] == 0 and garbage["duplicated"] == 0
    assert garbage["formations_done"] >= 1 and garbage["formations_open"] == 0
    assert garbage["recovery_s"] is not None
    # three mentions in a group, then a DM: every one answered and journaled once
    assert busy["sent"] == busy["confirmed"] == busy["stored"] == 4
    assert busy["lost"] == 0 and busy["duplicated"] == 0
    assert busy["recovery_s"] is not None and busy["concurrency"] > 1
