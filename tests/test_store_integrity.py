"""The run store survives SIGKILL in the middle of writing: a child process records runs as fast as it can and
prints each id once add_run has returned (committed); it is killed at a random moment, 20 times over, on the same
database. Afterwards `PRAGMA integrity_check` says ok and every run a child reported is there, whole (its row,
summary and every op as written), and the store still takes new runs."""
from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

from tests.conftest import ROOT

KILLS = 20
OPS = 120  # ops per run: a run is one transaction of 1 + OPS rows

WRITER = f"""
import sys
from mnnscope.inspector.store.runs import RunStore
store = RunStore(sys.argv[1])
first = int(sys.argv[2])
for seq in range(first, first + 100000):
    ops = [{{"name": f"op{{seq}}_{{i}}", "type": "Conv", "ms": seq + i / 1000.0, "flops": float(i),
            "spread": [seq, i]}} for i in range({OPS})]
    run_id = store.add_run(kind="profile", model_path=None, settings={{"seq": seq}}, backend_used="CPU",
                           summary={{"seq": seq, "total_ms": float(seq)}}, ops=ops)
    print(run_id, seq, flush=True)
"""


def expected_ops(seq: int) -> list[dict]:
    return [{"index": i, "name": f"op{seq}_{i}", "type": "Conv", "ms": seq + i / 1000.0, "flops": float(i),
             "spread": [seq, i]} for i in range(OPS)]


def test_sigkill_while_writing_loses_no_committed_run(tmp_path):
    from mnnscope.inspector.store.runs import RunStore
    db = tmp_path / "runs.sqlite"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rng = random.Random(14)
    reported: dict[int, int] = {}
    seq = 0
    for _ in range(KILLS):
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(seq)], stdout=subprocess.PIPE,
                                 text=True, env=env)
        first = child.stdout.readline()  # it is writing: one run committed
        assert first, "the writer did not start"
        time.sleep(rng.uniform(0.0, 0.4))
        child.send_signal(signal.SIGKILL)
        out = first + child.stdout.read()
        child.wait(10)
        assert child.returncode == -signal.SIGKILL
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2:  # a half-printed last line is not a report
                reported[int(parts[0])] = int(parts[1])
        seq = max(reported.values()) + 1000  # the next child's runs are told apart from the last one's
    assert len(reported) >= KILLS

    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    # no half-written run: every run row has all its ops
    partial = con.execute("SELECT r.id, COUNT(o.idx) FROM runs r LEFT JOIN ops o ON o.run_id = r.id GROUP BY r.id "
                          "HAVING COUNT(o.idx) != ?", (OPS,)).fetchall()
    assert partial == []
    con.close()

    store = RunStore(db)
    for run_id, s in reported.items():
        run = store.get_run(run_id)
        assert run is not None, f"run {run_id} was reported committed and is gone"
        assert run["summary"] == {"seq": s, "total_ms": float(s)} and run["settings"] == {"seq": s}
        assert run["ops"] == expected_ops(s)
    new = store.add_run(kind="profile", summary={"after": True})
    assert store.get_run(new)["summary"] == {"after": True}
    print(f"{KILLS} SIGKILLs mid-write, {len(reported)} committed runs reported, all intact")
