"""The persistent privacy ledger (``Budget.open``): round trip, refusals, a 50-process race, SIGKILL.

The load and kill tests start real processes (``sys.executable -c ...``) that import dpaudit, so
they check the file lock and the atomic replace across processes, not just within one.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime
from pathlib import Path

import pytest

from dpaudit import Budget, BudgetError, DataError, DPAuditError
from dpaudit.privacy import LedgerBudget
from dpaudit.privacy._budget import TOLERANCE

PINNED = r"release {label!r} asks for epsilon={eps} but only {left} of the total {total} remains \({short} short\); lower its epsilon or raise the total budget"


def pinned(label: str, eps: str, left: str, total: str, short: str) -> str:
    return "^" + PINNED.format(label=label, eps=re.escape(eps), left=re.escape(left), total=re.escape(total),
                               short=re.escape(short)) + "$"


def files(folder: Path) -> dict[str, bytes]:
    """Every file in ``folder`` (hidden ones too) with its bytes."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def check_file(path: Path) -> dict:
    """Parse the ledger independently of dpaudit and check every entry is complete."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["format"] == "dpaudit.ledger" and doc["version"] == 1 and doc["total_epsilon"] > 0
    for entry in doc["entries"]:
        assert set(entry) == {"id", "label", "epsilon", "time", "pid"}
        assert re.fullmatch(r"[0-9a-f]{32}", entry["id"])
        assert isinstance(entry["label"], str) and isinstance(entry["pid"], int)
        assert isinstance(entry["epsilon"], float) and entry["epsilon"] > 0
        assert datetime.fromisoformat(entry["time"]).utcoffset().total_seconds() == 0
    assert len({e["id"] for e in doc["entries"]}) == len(doc["entries"])
    return doc


# -- round trip ---------------------------------------------------------------------------------------


def test_round_trip(tmp_path):
    path = tmp_path / "ledger.json"
    budget = Budget.open(path, 1.0)
    assert isinstance(budget, Budget) and isinstance(budget, LedgerBudget)
    assert budget.ledger == () and budget.spent == 0.0 and budget.remaining == 1.0
    budget.spend(0.25, "tvd")
    budget.spend_many([("tc", 0.25), ("repair", 0.125)])
    for again in (Budget.open(path), Budget.open(path, 1.0), LedgerBudget(str(path), 1.0)):
        assert again.total_epsilon == 1.0
        assert again.ledger == budget.ledger == (("tvd", 0.25), ("tc", 0.25), ("repair", 0.125))
        assert again.spent == budget.spent == 0.625
        assert again.remaining == budget.remaining == 0.375
    doc = check_file(path)
    assert [e["label"] for e in doc["entries"]] == ["tvd", "tc", "repair"]
    assert {e["pid"] for e in doc["entries"]} == {os.getpid()}
    assert [e.id for e in budget.entries] == [e["id"] for e in doc["entries"]]
    assert files(tmp_path).keys() == {"ledger.json", "ledger.json.lock"}  # no temporaries left


def test_spend_many_is_all_or_nothing(tmp_path):
    path = tmp_path / "ledger.json"
    budget = Budget.open(path, 1.0)
    budget.spend(0.625, "first")
    before = files(tmp_path)
    # the second item does not fit after the first: neither is written
    with pytest.raises(BudgetError, match=pinned("b", "0.5", "0.275", "1", "0.225")):
        budget.spend_many([("a", 0.1), ("b", 0.5)])
    assert files(tmp_path) == before
    with pytest.raises(DPAuditError, match="epsilon must be a positive finite number, got -1"):
        budget.spend_many([("a", 0.1), ("b", -1)])
    with pytest.raises(DPAuditError, match="item 1 must be a \\(label, epsilon\\) pair"):
        budget.spend_many([("a", 0.1), ("b",)])
    with pytest.raises(DPAuditError, match="label must be a non-empty string"):
        budget.spend_many([("a", 0.1), (3, 0.1)])
    budget.spend_many([])
    assert files(tmp_path) == before
    assert Budget.open(path).ledger == (("first", 0.625),)
    budget.spend_many([("a", 0.125), ("b", 0.25)])  # exactly the rest
    assert Budget.open(path).remaining == 0.0


def test_overspend_refused_with_pinned_message(tmp_path):
    path = tmp_path / "ledger.json"
    budget = Budget.open(path, 1.0)
    budget.spend(0.5, "tvd")
    budget.spend(0.25, "tc")
    before = files(tmp_path)
    with pytest.raises(BudgetError, match=pinned("repair", "0.5", "0.25", "1", "0.25")):
        budget.spend(0.5, "repair")
    with pytest.raises(BudgetError, match=pinned("repair", "0.5", "0.25", "1", "0.25")):
        budget.check(0.5, "repair")
    assert files(tmp_path) == before
    budget.spend(0.25, "repair")
    with pytest.raises(BudgetError):
        budget.spend(1e-6, "more")


def test_float_thirds_sum_to_total(tmp_path):
    budget = Budget.open(tmp_path / "ledger.json", 1.0)
    for _ in range(3):
        budget.spend(1 / 3, "third")
    assert Budget.open(tmp_path / "ledger.json").remaining == 0.0


def test_objects_never_trust_their_memory(tmp_path):
    path = tmp_path / "ledger.json"
    first, second = Budget.open(path, 1.0), Budget.open(path)
    first.spend(0.75, "tvd")
    assert second.spent == 0.75 and second.ledger == (("tvd", 0.75),)
    with pytest.raises(BudgetError, match=pinned("tc", "0.5", "0.25", "1", "0.25")):
        second.spend(0.5, "tc")
    second.spend(0.25, "tc")
    assert first.remaining == 0.0


def test_in_memory_spend_many_is_all_or_nothing():
    budget = Budget(1.0)
    budget.spend(0.5, "tvd")
    with pytest.raises(BudgetError, match=pinned("b", "0.5", "0.25", "1", "0.25")):
        budget.spend_many([("a", 0.25), ("b", 0.5)])
    with pytest.raises(DPAuditError, match="epsilon must be a positive"):
        budget.spend_many([("a", 0.25), ("b", float("nan"))])
    with pytest.raises(DPAuditError, match="list of \\(label, epsilon\\) pairs"):
        budget.spend_many("ab")
    assert budget.ledger == (("tvd", 0.5),)
    budget.spend_many([("a", 0.25), ("b", 0.25)])
    assert budget.ledger == (("tvd", 0.5), ("a", 0.25), ("b", 0.25)) and budget.remaining == 0.0


def test_stale_temporaries_are_ignored_and_swept(tmp_path):
    path = tmp_path / "ledger.json"
    Budget.open(path, 1.0).spend(0.25, "tvd")
    stale = tmp_path / ".ledger.json.99999-deadbeef.tmp"
    stale.write_text('{"format": "dpaudit.ledger", "half a fi')
    other = tmp_path / ".ledger.json.x.1-ab.tmp"  # a temporary of another file: not ours to remove
    other.write_text("x")
    budget = Budget.open(path)
    assert budget.ledger == (("tvd", 0.25),)
    budget.spend(0.25, "tc")
    assert not stale.exists() and other.exists()
    assert Budget.open(path).ledger == (("tvd", 0.25), ("tc", 0.25))


# -- refusals -----------------------------------------------------------------------------------------


def _ledger_text(**changes) -> str:
    doc = {"format": "dpaudit.ledger", "version": 1, "total_epsilon": 1.0, "entries": []}
    doc.update(changes)
    return json.dumps(doc)


ENTRY = {"id": "0" * 32, "label": "tvd", "epsilon": 0.5, "time": "2025-01-01T00:00:00+00:00", "pid": 1}

REFUSED_FILES = {
    "corrupt JSON": ("{not json", DataError, "is corrupt (not valid JSON"),
    "empty file": ("", DataError, "is corrupt (not valid JSON"),
    "not UTF-8": (b"\xff\xfe{}", DataError, "is corrupt (it is not UTF-8 text)"),
    "foreign JSON": ('{"hello": 1}', DataError, "is not a dpaudit ledger"),
    "a JSON list": ("[1, 2]", DataError, "is not a dpaudit ledger"),
    "wrong version": (_ledger_text(version=2), DataError, "has version 2, but this dpaudit reads version 1"),
    "bad total": (_ledger_text(total_epsilon=-1), DataError, "total_epsilon is -1"),
    "NaN epsilon": (_ledger_text(entries=[dict(ENTRY, epsilon=float("nan"))]), DataError, "not valid JSON"),
    "entry without epsilon": (_ledger_text(entries=[{k: v for k, v in ENTRY.items() if k != "epsilon"}]),
                              DataError, "entry 0 has epsilon None"),
    "repeated id": (_ledger_text(entries=[ENTRY, ENTRY]), DataError, "entry 1 repeats the id"),
    "bad time": (_ledger_text(entries=[dict(ENTRY, time="yesterday")]), DataError, "entry 0 has time 'yesterday'"),
    # an edited ledger: no writer can spend past the total, so entries that do contradict the file
    "spent > total": (_ledger_text(entries=[ENTRY, dict(ENTRY, id="1" * 32, epsilon=0.75)]), DataError,
                      "its entries spend epsilon=1.25, more than its total_epsilon=1; it was edited"),
    "total lowered": (_ledger_text(total_epsilon=0.25, entries=[ENTRY]), DataError,
                      "its entries spend epsilon=0.5, more than its total_epsilon=0.25"),
    "negative spend": (_ledger_text(entries=[dict(ENTRY, epsilon=-0.5)]), DataError,
                       "entry 0 has epsilon -0.5, not a positive number"),
}


@pytest.mark.parametrize("case", list(REFUSED_FILES))
@pytest.mark.parametrize("total", [None, 1.0])
def test_refuses_bad_files(tmp_path, case, total):
    content, error, message = REFUSED_FILES[case]
    path = tmp_path / "ledger.json"
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    before = files(tmp_path)
    with pytest.raises(error, match=re.escape(message)) as info:
        Budget.open(path, total)
    text = str(info.value)
    assert str(path) in text and "\n" not in text and ";" in text  # names the file, says what to do
    assert files(tmp_path) == before  # not even a lock file


def test_a_ledger_spent_up_to_its_slack_still_opens(tmp_path):
    """A debit may exceed what remains by TOLERANCE × total (float splits): such a file is not 'edited'."""
    path = tmp_path / "ledger.json"
    budget = Budget.open(path, 1.0)
    budget.spend_many([("a", 1 / 3), ("b", 1 / 3), ("c", 1 / 3 + 0.9 * TOLERANCE)])
    assert Budget.open(path).spent == pytest.approx(1.0) and LedgerBudget.view(path).remaining == 0.0


def test_view_reads_without_creating_or_writing(tmp_path, monkeypatch):
    path = tmp_path / "ledger.json"
    Budget.open(path, 1.0).spend(0.25, "tvd")
    (tmp_path / "ledger.json.lock").unlink()  # e.g. a ledger copied from elsewhere
    before = files(tmp_path)
    real_access = os.access  # a read-only folder (patched: root ignores chmod)
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: not mode & os.W_OK and real_access(p, mode, **kw))
    view = LedgerBudget.view(path)
    assert view.read_only and view.ledger == (("tvd", 0.25),) and view.spent == 0.25 and view.remaining == 0.75
    assert [e.label for e in view.entries] == ["tvd"]
    with pytest.raises(DataError, match=r"was opened read-only \(LedgerBudget.view\); open it with Budget.open"):
        view.spend(0.25, "tc")
    monkeypatch.undo()
    assert files(tmp_path) == before  # not even a lock file
    with pytest.raises(DataError, match="does not exist"):
        LedgerBudget.view(tmp_path / "missing.json")
    with pytest.raises(DPAuditError, match="read_only must be True or False, got 'yes'"):
        LedgerBudget(path, read_only="yes")
    assert list(tmp_path.iterdir()) == [path]
    Budget.open(path).spend(0.25, "tc")  # a writer creates the lock file as before
    assert (tmp_path / "ledger.json.lock").is_file() and LedgerBudget.view(path).spent == 0.5


def test_dpaudit_ledger_is_a_read_only_view(tmp_path):
    from typer.testing import CliRunner

    from dpaudit.cli import app

    path = tmp_path / "ledger.json"
    path.write_text(_ledger_text(entries=[ENTRY]))  # written by hand: no lock file yet
    before = files(tmp_path)
    shown = CliRunner().invoke(app, ["ledger", str(path), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["spent"] == 0.5 and files(tmp_path) == before  # no ledger.json.lock
    path.write_text(_ledger_text(total_epsilon=0.25, entries=[ENTRY]))  # edited: spent 0.5 > total 0.25
    before = files(tmp_path)
    refused = CliRunner().invoke(app, ["ledger", str(path)])
    assert refused.exit_code == 2 and refused.stdout == "" and files(tmp_path) == before
    assert refused.stderr == (f"dpaudit: error: ledger {str(path)!r} is corrupt (its entries spend epsilon=0.5, more "
                              "than its total_epsilon=0.25; it was edited); restore it from a backup, or start a new "
                              "ledger file\n")


def test_refuses_mismatched_total(tmp_path):
    path = tmp_path / "ledger.json"
    Budget.open(path, 1.0).spend(0.5, "tvd")
    before = files(tmp_path)
    with pytest.raises(BudgetError, match=r"holds a total budget of epsilon=1, not the 2 asked for; open it with "
                                          r"total_epsilon=1 \(or None\)"):
        Budget.open(path, 2.0)
    with pytest.raises(BudgetError, match=r"epsilon=1, not the 1.0000001 asked for"):
        Budget.open(path, 1.0000001)
    assert files(tmp_path) == before
    assert Budget.open(path, 1.0 + 1e-12).total_epsilon == 1.0  # within TOLERANCE: the file's total


def test_refuses_missing_file_without_total(tmp_path):
    with pytest.raises(DataError, match=r"ledger '.*missing.json' does not exist; give total_epsilon to create it"):
        Budget.open(tmp_path / "missing.json")
    assert list(tmp_path.iterdir()) == []


def test_refuses_directory(tmp_path):
    (tmp_path / "ledger").mkdir()
    for total in (None, 1.0):
        with pytest.raises(DataError, match=r"ledger '.*ledger' is a folder, not a ledger file; give the path of a file"):
            Budget.open(tmp_path / "ledger", total)
    assert [p.name for p in tmp_path.iterdir()] == ["ledger"] and not any((tmp_path / "ledger").iterdir())


def test_refuses_missing_parent(tmp_path):
    with pytest.raises(DataError, match=r"its folder '.*nowhere' does not exist; create it first or choose another path"):
        Budget.open(tmp_path / "nowhere" / "ledger.json", 1.0)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "afile").write_text("x")
    with pytest.raises(DataError, match=r"'.*afile' is a file, not a folder"):
        Budget.open(tmp_path / "afile" / "ledger.json", 1.0)


@pytest.mark.parametrize("bad", [0, -1, float("inf"), "1"])
def test_refuses_bad_total(tmp_path, bad):
    with pytest.raises(DPAuditError, match="total_epsilon must be a positive finite number"):
        Budget.open(tmp_path / "ledger.json", bad)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("existing", [False, True])
def test_refuses_read_only_folder(tmp_path, existing):
    folder = tmp_path / "ro"
    folder.mkdir()
    if existing:
        Budget.open(folder / "ledger.json", 1.0)
    before = files(folder)
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("chmod does not bind for this user (root): a read-only folder cannot be simulated")
        with pytest.raises(DataError, match=r"its folder '.*ro' is not writable, so no debit could be recorded; fix"):
            Budget.open(folder / "ledger.json", 1.0)
        assert files(folder) == before
    finally:
        folder.chmod(0o755)


def test_refuses_unwritable_folder_even_as_root(tmp_path, monkeypatch):
    # root ignores chmod, so the check above skips there; the refusal itself is exercised here
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: not mode & os.W_OK)
    with pytest.raises(DataError, match=r"is not writable, so no debit could be recorded"):
        Budget.open(tmp_path / "ledger.json", 1.0)
    assert list(tmp_path.iterdir()) == []


def test_failed_write_records_nothing(tmp_path, monkeypatch):
    path = tmp_path / "ledger.json"
    budget = Budget.open(path, 1.0)
    budget.spend(0.25, "tvd")
    before = files(tmp_path)

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(DataError, match=r"^cannot write ledger '.*ledger.json' \(No space left on device\); "
                                        r"nothing was recorded: free disk space"):
        budget.spend(0.25, "tc")
    monkeypatch.undo()
    assert files(tmp_path) == before  # the old file, and no temporary left behind
    assert budget.ledger == (("tvd", 0.25),)


def test_refuses_changes_behind_its_back(tmp_path):
    path = tmp_path / "ledger.json"
    budget = Budget.open(path, 1.0)
    budget.spend(0.25, "tvd")
    path.write_text("{broken")
    before = files(tmp_path)
    with pytest.raises(DataError, match="is corrupt"):
        budget.spend(0.25, "tc")
    with pytest.raises(DataError, match="is corrupt"):
        _ = budget.remaining
    assert files(tmp_path) == before
    path.unlink()
    with pytest.raises(DataError, match="no longer exists"):
        budget.spend(0.25, "tc")
    assert not path.exists()
    Budget.open(path, 2.0)
    with pytest.raises(BudgetError, match="now holds a total budget of epsilon=2, not 1"):
        budget.spend(0.25, "tc")
    assert Budget.open(path).ledger == ()


# -- many processes -----------------------------------------------------------------------------------

RACER = textwrap.dedent("""
    import json, os, random, sys, time
    from dpaudit import BudgetError
    from dpaudit.privacy import Budget
    path, go, index = sys.argv[1], sys.argv[2], int(sys.argv[3])
    budget = Budget.open(path, 1.0)  # the first ones race to create the file
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.002)
    ok, refused = [], 0
    for attempt in range(3):
        time.sleep(random.uniform(0, 0.005))
        label = f"c{index}-a{attempt}"
        try:
            budget.spend(0.1, label)
        except BudgetError:
            refused += 1
        else:
            ok.append(label)
    print(json.dumps({"ok": ok, "refused": refused}), flush=True)
""")


def test_fifty_processes_never_overspend(tmp_path):
    path, go = tmp_path / "ledger.json", tmp_path / "go"
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(path), str(go), str(i)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(50)]
    try:
        for proc in procs:  # every child has imported dpaudit and opened the ledger
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        started = time.perf_counter()
        go.touch()
        reports = []
        for proc in procs:
            out, err = proc.communicate(timeout=600)  # hang guard
            assert proc.returncode == 0, err
            reports.append(json.loads(out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    race = time.perf_counter() - started
    succeeded = [label for r in reports for label in r["ok"]]
    refused = sum(r["refused"] for r in reports)
    assert len(succeeded) == 10 and refused == 150 - 10
    doc = check_file(path)
    assert sorted(e["label"] for e in doc["entries"]) == sorted(succeeded)
    assert len({e["pid"] for e in doc["entries"]}) == len({label.split("-")[0] for label in succeeded})
    budget = Budget.open(path)
    assert math.isclose(budget.spent, 1.0, rel_tol=TOLERANCE) and budget.spent <= 1.0 * (1 + TOLERANCE)
    assert budget.remaining == 0.0
    assert sorted(files(tmp_path)) == ["go", "ledger.json", "ledger.json.lock"]
    print(f"\n50 processes × 3 attempts: {len(succeeded)} spends, {refused} refused; race {race:.2f} s, "
          f"total {time.perf_counter() - start:.2f} s")


SPENDER = textwrap.dedent("""
    import os, sys
    from dpaudit import BudgetError
    from dpaudit.privacy import Budget
    path, prefix = sys.argv[1], sys.argv[2]
    budget = Budget.open(path)
    os.write(1, b"ready\\n")
    n = 0
    while True:
        try:
            budget.spend(1e-4, f"{prefix}-{n}")
        except BudgetError:
            os.write(1, b"refused\\n")
            continue
        n += 1
        os.write(1, b"done\\n")
""")


def test_sigkill_never_loses_or_duplicates_a_spend(tmp_path):
    path = tmp_path / "ledger.json"
    Budget.open(path, 1.0)
    rng = random.Random(20250131)
    rounds, spends, killed_after_replace, stale_seen = 30, 0, 0, 0
    start = time.perf_counter()
    for round_ in range(rounds):
        report = tmp_path / f"report-{round_}.txt"
        entries_before = len(check_file(path)["entries"])
        with open(report, "wb") as out:
            proc = subprocess.Popen([sys.executable, "-c", SPENDER, str(path), f"r{round_}"], stdout=out,
                                    stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 300  # a hang guard, not a speed check
            while b"ready" not in report.read_bytes():
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "the child did not start"
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.15))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=300)  # hang guard
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL
        # a killed holder released its flock: it can be taken at once
        with open(tmp_path / "ledger.json.lock") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(lock, fcntl.LOCK_UN)
        reported = report.read_bytes().count(b"done\n")
        doc = check_file(path)  # parses, every entry complete, ids unique
        mine = [e["label"] for e in doc["entries"] if e["label"].startswith(f"r{round_}-")]
        assert len(mine) in (reported, reported + 1), (round_, reported, len(mine))
        assert mine == [f"r{round_}-{i}" for i in range(len(mine))]  # each spend once, in order
        assert len(doc["entries"]) == entries_before + len(mine)
        assert math.fsum(e["epsilon"] for e in doc["entries"]) <= doc["total_epsilon"] * (1 + TOLERANCE)
        assert Budget.open(path).ledger == tuple((e["label"], e["epsilon"]) for e in doc["entries"])
        spends += len(mine)
        killed_after_replace += len(mine) - reported
        stale_seen += any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
    elapsed = time.perf_counter() - start
    budget = Budget.open(path)
    budget.spend(1e-4, "after")  # a new writer sweeps the temporaries killed writers left
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
    assert len(budget.ledger) == spends + 1
    print(f"\n{rounds} SIGKILL rounds in {elapsed:.2f} s: {spends} spends recorded, {killed_after_replace} kill(s) "
          f"between replace and report, {stale_seen} round(s) left a stale temporary")
