"""The command line as a new user meets it: readable ``--help`` for every command, a line for every file
written, and a progress spinner only on a terminal."""

from __future__ import annotations

import io
import json

import pytest
import typer
from typer.testing import CliRunner

from dpaudit.cli import app
from dpaudit.measures import MEASURES

runner = CliRunner()


def _command_paths(command=None, path=()):
    """Every command and group of ``dpaudit``, as its argument path (``()`` is the root)."""
    command = command or typer.main.get_command(app)
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _command_paths(sub, (*path, name))


COMMANDS = list(_command_paths())


def _help(*path: str) -> str:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_command_is_reached():
    names = {" ".join(p) for p in COMMANDS}
    assert {"", "fairness", "repair-wcnf", "ledger", "selfcheck", "datasets", "datasets list", "datasets info",
            "datasets path", "mia", "mia evaluate", "mia train", "mia simulate"} <= names


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "dpaudit")
def test_help_has_no_type_placeholders(path):
    text = _help(*path)
    assert "Usage: dpaudit" in text
    assert "<bool>" not in text, text  # a flag takes no value
    assert "{" not in text and "}" not in text, text  # arguments are named DATA, not {data}


@pytest.mark.parametrize("path", [p for p in COMMANDS if p[-1:] in {("fairness",), ("repair-wcnf",), ("info",),
                                                                     ("path",), ("evaluate",), ("simulate",),
                                                                     ("train",), ("ledger",)}],
                         ids=" ".join)
def test_usage_names_arguments_in_capitals(path):
    usage = next(line for line in _help(*path).splitlines() if "Usage:" in line)
    argument = usage.split("[OPTIONS]", 1)[1].split()
    assert argument and all(word.isupper() for word in argument), usage


def test_fairness_help_lists_the_measures_and_the_default():
    text = " ".join(_help("fairness").split())
    assert "tvd|tc|repair" in text
    for name, cls in MEASURES.items():
        assert f"{name} ({cls.title})" in text
    assert "(default: -m tvd -m tc, as dpaudit.audit(); U_R can take minutes on large data: add it with -m tvd -m tc " \
           "-m repair)" in text
    assert "'dpaudit[spark]'" in text  # the extra's name is not eaten as markup


def test_flags_still_work_and_missing_arguments_name_them_as_in_usage():
    result = runner.invoke(app, ["fairness"])
    assert result.exit_code == 2 and result.stderr.strip() == \
        "dpaudit: error: Missing argument 'DATA'; see: dpaudit fairness --help"
    listed = runner.invoke(app, ["datasets", "list", "--json"])
    assert listed.exit_code == 0 and any(d["name"] == "adult" for d in json.loads(listed.stdout))


# -- every command that writes a file says what it wrote -----------------------------------------------

def test_mia_simulate_fpc_out_says_what_it_wrote(tmp_path):
    out = tmp_path / "fpc.json"
    result = runner.invoke(app, ["mia", "simulate", "fpc", "--repeats", "2", "--models", "8", "--pool", "40",
                                 "--train", "20", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines() == [f"wrote {out} (fpc simulation, JSON: M = 8, N+ = 40, N = 20, 2 pools)"]
    assert json.loads(out.read_text())
    assert result.stderr == ""


def test_mia_simulate_json_stdout_stays_one_document(tmp_path):
    out = tmp_path / "fpc.json"
    result = runner.invoke(app, ["mia", "simulate", "fpc", "--repeats", "2", "--models", "8", "--pool", "40",
                                 "--train", "20", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(out.read_text())
    assert result.stderr.strip().startswith(f"wrote {out} (fpc simulation")


def test_mia_simulate_calibration_out_says_what_it_wrote(tmp_path):
    out = tmp_path / "scores.npz"
    result = runner.invoke(app, ["mia", "simulate", "calibration", "--models", "8", "--records", "60",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == \
        f"wrote {out} (ScoreSet: 8 models × 60 records; evaluate with: dpaudit mia evaluate {out})"
    assert out.is_file()


def test_repair_wcnf_says_what_it_wrote(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("g,y\na,0\na,1\nb,1\nb,1\n")
    out = tmp_path / "f.wcnf"
    result = runner.invoke(app, ["repair-wcnf", str(data), "-c", "g ⊥ y", "--infer-schema", "-o", str(out)])
    assert result.exit_code == 0, result.output
    line, = result.stdout.strip().splitlines()
    assert line.startswith(f"wrote {out} (DIMACS WCNF, p wcnf ") and out.is_file()


# -- progress: a spinner on a terminal's stderr, nothing anywhere else ---------------------------------

class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_spinner_draws_on_a_terminal_and_nowhere_else(monkeypatch):
    from dpaudit.cli._app import spinner

    terminal = _Terminal()
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setattr("sys.stderr", terminal)
    with spinner("reading adult") as status:
        status("counting rows for 4 criteria")
    drawn = terminal.getvalue()
    assert "reading adult" in drawn or "counting rows for 4 criteria" in drawn

    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    with spinner("reading adult") as status:
        status("counting rows")
    assert pipe.getvalue() == ""


def test_fairness_reports_its_steps_to_the_spinner(tmp_path, monkeypatch):
    import dpaudit.cli.fairness as fairness_cli

    steps: list[str] = []

    class Recorder:
        def __init__(self, message):
            steps.append(message)

        def __enter__(self):
            return steps.append

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(fairness_cli, "spinner", Recorder)
    data = tmp_path / "d.csv"
    data.write_text("g,y\n" + "a,0\na,1\nb,1\nb,1\n" * 10)
    result = runner.invoke(app, ["fairness", str(data), "-c", "g ⊥ y", "--infer-schema", "--exact", "--json",
                                 "-m", "tvd", "-m", "tc", "-m", "repair"])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)
    assert steps[0] == f"reading {data}" and steps[1] == "counting rows for 1 criterion"
    assert [s.split(" ")[0] for s in steps[2:5]] == ["U_MI^TVD:", "U_TC", "U_R"]
    assert "semantics=ci" in steps[4] and "40 rows, 1 block" in steps[4]
    assert steps[5:] and all(s.startswith("U_R (ci)") and "block" in s for s in steps[5:]), steps  # per block


def test_fairness_in_a_pipe_writes_nothing_to_stderr(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("g,y\n" + "a,0\na,1\nb,1\nb,1\n" * 10)
    result = runner.invoke(app, ["fairness", str(data), "-c", "g ⊥ y", "--infer-schema", "--epsilon", "1", "--json",
                                 *(a for m in MEASURES for a in ("-m", m))])
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.stdout)["measures"]) == set(MEASURES)
    assert result.stderr == ""
