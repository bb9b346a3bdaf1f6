"""Every option of every command, given something hostile: one ``dpaudit: error:`` line, exit 2, nothing written.

``{csv}`` is a small valid CSV and ``{schema}`` its declared schema; ``{tmp}`` a fresh folder.
"""

from __future__ import annotations

import pytest

from dpaudit._validation import CHOICE, NUMBER, WHOLE
from dpaudit.mia.attacks import ATTACKS
from dpaudit.mia.designs import EVEN_MODELS_HINT
from dpaudit.mia.evaluate import FPR_FLOOR_HINT, MIN_FPR
from dpaudit.mia.scores import TRAIN_SIZE_HINT
from dpaudit.selfcheck._params import DRAWS_HINT, MAX_DRAWS, MIN_DRAWS
from tests.hostile.conftest import assert_one_line_error, files_in

FAIR = ["fairness", "{csv}", "-c", "sex ⊥ y", "--schema", "{schema}"]
AUDIT = ["mia", "audit-dp", "--data", "{csv}", "--label", "y", "--schema", "{schema}", "--learner", "logreg"]
#: The ``bounds`` of the messages of a refused --fpr, an M the efficient design cannot use (mia train, simulate)
#: and a training-set size a pool of 100 records cannot hold.
FPR = f" >= {MIN_FPR:g} and < 1{FPR_FLOOR_HINT}"
TRAIN_M, SIMULATE_M = " >= 6 and even" + EVEN_MODELS_HINT, " >= 2 and even" + EVEN_MODELS_HINT
TRAIN_N = " >= 1 and <= 99" + TRAIN_SIZE_HINT
#: The ``bounds`` of a refused ``selfcheck --draws``.
DRAWS = f" >= {MIN_DRAWS:g} and <= {MAX_DRAWS:g}{DRAWS_HINT}"

CASES = [
    # -- the command line itself
    (["fairnes", "{csv}"], "No such command 'fairnes'"),
    (["mia", "evaluat", "x.npz"], "No such command 'evaluat'"),
    (["fairness"], "Missing argument 'DATA'"),
    (FAIR + ["--exact", "--frobnicate"], "No such option: --frobnicate"),
    (["mia", "train"], "Missing argument 'OUT'"),
    # -- fairness: the mode and ε
    (FAIR, "give exactly one of --epsilon"),
    (FAIR + ["--exact", "--epsilon", "1"], "give exactly one of --epsilon"),
    (FAIR + ["--exact", "--seed", "3"], "seed fixes the noise of DP releases: it needs epsilon"),
    (FAIR + ["--epsilon", "abc"], "Invalid value for '--epsilon'"),
    (FAIR + ["--epsilon", "-1"], "epsilon must be a positive finite number"),
    (FAIR + ["--epsilon", "0"], "epsilon must be a positive finite number"),
    (FAIR + ["--epsilon", "inf"], "epsilon must be a positive finite number"),
    (FAIR + ["--epsilon", "nan"], "epsilon must be a positive finite number"),
    (FAIR + ["--epsilon", "1e-320"], "epsilon"),
    (FAIR + ["--epsilon", "1", "--seed", "-1"], "seed must be a non-negative integer"),
    (FAIR + ["--epsilon", "1", "--seed", "abc"], "Invalid value for '--seed'"),
    (FAIR + ["--epsilon", "1", "--seed", "1.5"], "Invalid value for '--seed'"),
    # -- fairness: measures and their options
    (FAIR + ["--exact", "-m", "nope"], "unknown measure 'nope'"),
    (FAIR + ["--exact", "-m", "tvd", "-m", "tvd"], "requested twice"),
    (FAIR + ["--exact", "-m", "tc", "--k", "0"], "k must be an integer >= 1"),
    (FAIR + ["--exact", "-m", "tc", "--k", "-3"], "k must be an integer >= 1"),
    (FAIR + ["--exact", "-m", "tc", "--k", "1.5"], "Invalid value for '--k'"),
    (FAIR + ["--exact", "--k", "0"], "k must be an integer >= 1"),  # tc is among the default measures
    (FAIR + ["--exact", "-m", "tvd", "--k", "0"], "option k configures tc, which is not among the measures"),
    (FAIR + ["--exact", "-m", "tvd", "--semantics", "bag"], "option semantics configures repair"),
    (FAIR + ["--exact", "-m", "repair", "--semantics", "nope"], "semantics must be one of ci, bag, set"),
    (FAIR + ["--exact", "--semantics", "bag"], "option semantics configures repair, which is not among the measures (tvd, tc)"),
    (FAIR + ["--exact", "-m", "tc", "--cells", "bogus"], "cells must be one of domain, observed"),
    (FAIR + ["--exact", "-m", "tc", "--name-cells", "-1"], "name_cells must be an integer >= 0"),
    (FAIR + ["--epsilon", "1", "-m", "tc", "--cells", "observed", "--name-cells", "2"],
     "naming top cells privately needs cells='domain'"),
    (FAIR + ["--exact", "-m", "repair", "--semantics", "foo"], "semantics must be one of ci, bag, set"),
    (FAIR + ["--exact", "-m", "repair", "--time-limit", "-1"], "time_limit must be a finite number > 0"),
    (FAIR + ["--exact", "-m", "repair", "--time-limit", "0"], "time_limit must be a finite number > 0"),
    (FAIR + ["--exact", "-m", "repair", "--time-limit", "nan"], "time_limit must be a finite number > 0"),
    (FAIR + ["--exact", "-m", "repair", "--time-limit", "inf"], "time_limit must be a finite number > 0"),
    (FAIR + ["--exact", "-m", "repair", "--work-limit", "-1"], "work_limit must be a finite number > 0"),
    (FAIR + ["--exact", "-m", "repair", "--work-limit", "nan"], "work_limit must be a finite number > 0"),
    (FAIR + ["--exact", "-m", "repair", "--option", "work_limit=lots"], "option work_limit takes a number"),
    (FAIR + ["--exact", "--option", "frobnicate=1"], "unknown option 'frobnicate'"),
    (FAIR + ["--exact", "--option", "k"], "--option takes NAME=VALUE"),
    (FAIR + ["--exact", "--option", "=3"], "--option takes NAME=VALUE"),
    (FAIR + ["--exact", "-m", "tc", "--option", "k=1.5"], "option k takes an integer, got '1.5'"),
    (FAIR + ["--exact", "-m", "repair", "--option", "time_limit=soon"], "option time_limit takes a number"),
    (FAIR + ["--exact", "-m", "tc", "--option", "k=0"], "k must be an integer >= 1"),
    (FAIR + ["--exact", "-m", "tc", "--option", "cells=bogus"], "cells must be one of domain, observed"),
    (FAIR + ["--exact", "-m", "tc", "--k", "3", "--option", "k=4"], "option k is given twice"),
    (FAIR + ["--exact", "-m", "tvd", "--option", "semantics=bag"], "option semantics configures repair"),
    # -- fairness: the budget split
    (FAIR + ["--epsilon", "1", "--split", "tvd"], "--split takes MEASURE=FRACTION"),
    (FAIR + ["--epsilon", "1", "--split", "tvd=abc"], "--split takes MEASURE=FRACTION"),
    (FAIR + ["--epsilon", "1", "-m", "tvd", "-m", "tc", "--split", "tvd=0.3", "--split", "tc=0.3"], "must sum to 1"),
    (FAIR + ["--epsilon", "1", "--split", "nope=1"], "budget split names"),
    (FAIR + ["--epsilon", "1", "-m", "tvd", "--split", "tvd=-1"], "fractions must be positive"),
    (FAIR + ["--epsilon", "1", "--split", "tvd=1"], "but the measures are ['tc', 'tvd']"),
    (FAIR + ["--exact", "--split", "tvd=7"], "split shares ε between measures: it needs epsilon"),
    # -- fairness: criteria
    (["fairness", "{csv}", "--schema", "{schema}", "--exact"], "give at least one criterion"),
    (["fairness", "{csv}", "-c", "", "--schema", "{schema}", "--exact"], "criterion"),
    (["fairness", "{csv}", "-c", "sex ⊥", "--schema", "{schema}", "--exact"], "has no outcome attribute"),
    (["fairness", "{csv}", "-c", "⊥ y", "--schema", "{schema}", "--exact"], "has no protected attribute"),
    (["fairness", "{csv}", "-c", "sex y", "--schema", "{schema}", "--exact"], "criterion"),
    (["fairness", "{csv}", "-c", "sex ⊥ y ⊥ age", "--schema", "{schema}", "--exact"], "criterion"),
    (["fairness", "{csv}", "-c", "nope ⊥ y", "--schema", "{schema}", "--exact"], "nope"),
    (["fairness", "{csv}", "-c", "sex ⊥ sex", "--schema", "{schema}", "--exact"], "sex"),
    (["fairness", "{csv}", "-c", "sex ⊥ y | ", "--schema", "{schema}", "--exact"], "criterion"),
    (["fairness", "{csv}", "--preset", "paper", "--schema", "{schema}", "--exact"], "--preset needs a registered dataset"),
    # -- fairness: the schema
    (["fairness", "{csv}", "-c", "sex ⊥ y", "--exact"], "is not a registered dataset"),
    (["fairness", "{csv}", "-c", "sex ⊥ y", "--exact", "--schema", "{tmp}/missing.json"], "does not exist"),
    (["fairness", "{csv}", "-c", "sex ⊥ y", "--exact", "--schema", "{tmp}"], "schema"),
    (["fairness", "{csv}", "-c", "sex ⊥ y", "--exact", "--schema", "{schema}", "--infer-schema"],
     "either --schema FILE or --infer-schema"),
    # -- fairness: the data argument
    (["fairness", "{tmp}/missing.csv", "-c", "a ⊥ b", "--exact", "--infer-schema"], "does not exist"),
    (["fairness", "{tmp}", "-c", "a ⊥ b", "--exact", "--infer-schema"], "directory"),
    (["fairness", "/dev/null", "-c", "a ⊥ b", "--exact", "--infer-schema"], "registered dataset"),
    (["fairness", "{tmp}/notes.txt", "-c", "a ⊥ b", "--exact", "--infer-schema"], "registered dataset"),
    # -- output files (--save FILE: the format by its suffix; --html FILE): checked before any work
    (FAIR + ["--exact", "--save", "{tmp}/out.pdf"], "cannot tell the format of"),
    (FAIR + ["--exact", "--save", "{tmp}/out"], "cannot tell the format of"),
    (FAIR + ["--exact", "--save", "{tmp}/.txt"], "cannot tell the format of"),
    (FAIR + ["--exact", "--save", "{tmp}/no/such/out.txt"], "does not exist"),
    (FAIR + ["--exact", "--save", "{csv}/out.json"], "is a file"),
    (FAIR + ["--exact", "--html", "{tmp}/no/such/out.html"], "does not exist"),
    (FAIR + ["--exact", "--save", "{tmp}/a.txt", "--save", "{tmp}/a.txt"], "is named twice"),
    (FAIR + ["--exact", "--html", "{tmp}/a.html", "--save", "{tmp}/a.html"], "is named twice"),
    (["mia", "evaluate", "{scores}", "--save", "{tmp}/r.docx"], "cannot tell the format of"),
    (["mia", "evaluate", "{scores}", "--save", "{tmp}/missing/r.html"], "does not exist"),
    (["mia", "evaluate", "{scores}", "--html", "{tmp}/missing/r.html"], "does not exist"),
    (["report", "{tmp}/missing.json"], "give the file to write"),
    (["report", "{tmp}/missing.json", "--save", "{tmp}/r.xyz"], "cannot tell the format of"),
    (["report", "{tmp}/missing.json", "--save", "{tmp}/no/r.txt"], "does not exist"),
    (["report", "{tmp}/missing.json", "--save", "{tmp}/r.txt"], "does not exist"),  # the document, read next
    (["report", "{tmp}/notes.txt", "--save", "{tmp}/r.json"], "not valid JSON"),
    # -- repair-wcnf
    (["repair-wcnf", "{csv}", "-c", "sex ⊥ y", "--schema", "{schema}", "-o", "{tmp}/out.wcnf", "--semantics", "ci"],
     "semantics 'ci' has no tuple-level WCNF encoding"),
    (["repair-wcnf", "{csv}", "-c", "sex ⊥ y", "--schema", "{schema}", "-o", "{tmp}/no/such/out.wcnf"],
     "does not exist"),
    (["repair-wcnf", "{csv}", "-c", "sex ⊥ y", "--schema", "{schema}", "-o", "{tmp}"], "is a directory"),
    (["repair-wcnf", "{csv}", "-c", "sex ⊥ y", "--schema", "{schema}", "-o", "{csv}/x.wcnf"], "is a file"),
    (["repair-wcnf", "{csv}", "-c", "sex ⊥ y", "--schema", "{schema}", "-o", "{tmp}/o.wcnf", "--max-clauses", "0"],
     "max_clauses"),
    (["repair-wcnf", "{csv}", "-c", "sex ⊥ y", "--schema", "{schema}"], "Missing option '--out'"),
    # -- datasets
    (["datasets", "info", "nope"], "unknown dataset 'nope'"),
    (["datasets", "path", "nope"], "unknown dataset 'nope'"),
    (["datasets", "path", "census"], "generated in memory"),
    (["datasets", "frobnicate"], "No such command 'frobnicate'"),
    # -- mia evaluate
    (["mia", "evaluate", "{tmp}/missing.npz"], "no such score file"),
    (["mia", "evaluate", "{tmp}"], "run.json is missing"),
    (["mia", "evaluate", "{csv}"], "not an .npz archive"),
    (["mia", "evaluate", "{scores}", "--fpr", "abc"], "Invalid value for '--fpr'"),
    (["mia", "evaluate", "{scores}", "--fpr", "0"], NUMBER.format(name="fpr", bounds=FPR, value=0.0)),
    (["mia", "evaluate", "{scores}", "--fpr", "1"], NUMBER.format(name="fpr", bounds=FPR, value=1.0)),
    (["mia", "evaluate", "{scores}", "--fpr", "1e-300"], NUMBER.format(name="fpr", bounds=FPR, value=1e-300)),
    (["mia", "evaluate", "{scores}", "--n-boot", "-1"], "n_boot must be an integer >= 0"),
    (["mia", "evaluate", "{scores}", "--n-boot", "100000000"], "n_boot"),
    (["mia", "evaluate", "{scores}", "--threshold", "z"], "threshold must be one of t, normal"),
    (["mia", "evaluate", "{scores}", "--sign", "x"], "sign must be one of fitted, positive"),
    (["mia", "evaluate", "{scores}", "--attack", "magic"], CHOICE.format(name="attack", choices=", ".join(ATTACKS),
                                                                          value="magic")),
    (["mia", "evaluate", "{scores}", "--n-boot", "0", "--fpr", "0.1", "--fpr", "1e-13"],
     NUMBER.format(name="fpr", bounds=FPR, value=1e-13)),
    (["mia", "evaluate", "{scores}", "--seed", "-2"], "seed"),
    (["mia", "evaluate", "{scores}", "--n-boot", "0", "--seed", "7"], "--seed seeds only the bootstrap, and --n-boot 0"),
    (["mia", "evaluate", "{scores}", "--fpc=yes"], "Option '--fpc' does not take a value"),
    (["mia", "evaluate", "{scores}", "--strict=1"], "Option '--strict' does not take a value"),
    (["mia", "evaluate", "{scores}", "--fpc", "yes"], "unexpected extra argument(s) (yes)"),
    (["mia", "evaluate", "{scores}", "--by", "sex"], "--by sex: these scores do not say which rows of which data"),
    (["mia", "evaluate", "{scores}", "--by"], "Option '--by' requires an argument"),
    # -- mia train
    (["mia", "train", "{tmp}/run", "--models", "7", "--pool", "100"], WHOLE.format(name="n_models", bounds=TRAIN_M,
                                                                                   value=7)),
    (["mia", "train", "{tmp}/run", "--models", "4", "--pool", "100"], WHOLE.format(name="n_models", bounds=TRAIN_M,
                                                                                   value=4)),
    (["mia", "train", "{tmp}/run", "--models", "5", "--pool", "100", "--design", "poisson"],
     WHOLE.format(name="n_models", bounds=" >= 6", value=5)),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "3"], "pool_size must be an integer >= 4"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--dataset", "nope"], "unknown dataset 'nope'"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--dataset", "compas"],
     "declares no prediction task"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--model", "nope"], "model must be one of"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--model", "os:getcwd"], "has no fit"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--trainer", "x"], "trainer must be one of"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--design", "x"], "design must be one of"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--design", "poisson", "--train-size", "0"],
     WHOLE.format(name="train_size", bounds=TRAIN_N, value=0)),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--design", "poisson", "--train-size", "100"],
     WHOLE.format(name="train_size", bounds=TRAIN_N, value=100)),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--n-jobs", "0"], "n_jobs"),
    # one process per worker: an unbounded count would exhaust the memory before the first fit
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--n-jobs", "100000"], "n_jobs must be"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--n-jobs", "-100000"], "n_jobs must be"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--seed", "-1"], "seed"),
    (["mia", "train", "{csv}", "--models", "6", "--pool", "100"], "exists and is not a directory"),
    (["mia", "train", "{csv}/run", "--models", "6", "--pool", "100"], "is a file"),
    (["mia", "train", "{csv}/sub/run", "--models", "6", "--pool", "100"], "is a file, not a folder"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--label", "y"], "add --data FILE"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--data", "{csv}"], "--data needs --label COL"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--data", "{csv}", "--label", "zzz"],
     "no label column 'zzz'"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--data", "{csv}", "--label", "age"],
     "must hold exactly two values"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100", "--data", "{csv}", "--label", "y",
      "--positive", "7"], "does not occur"),
    (["mia", "train", "{tmp}/run", "--models", "6", "--pool", "100000", "--data", "{csv}", "--label", "y"],
     "exceeds the 200 rows"),
    # -- mia simulate
    (["mia", "simulate", "nope"], CHOICE.format(name="simulation", choices="calibration, fpc", value="nope")),
    (["mia", "simulate", "calibration", "--models", "3"], WHOLE.format(name="n_models", bounds=SIMULATE_M, value=3)),
    (["mia", "simulate", "calibration", "--records", "1"], "n_records must be an integer >= 2"),
    (["mia", "simulate", "calibration", "--out", "{tmp}/no/such/sim.npz"], "does not exist"),
    (["mia", "simulate", "calibration", "--out", "{tmp}"], "is a directory"),
    (["mia", "simulate", "fpc", "--pool", "2"], "pool_size must be an integer >= 3"),
    (["mia", "simulate", "fpc", "--design", "x"], "design must be one of efficient, subsets"),
    (["mia", "simulate", "fpc", "--repeats", "0"], "n_repeats must be an integer >= 1"),
    (["mia", "simulate", "fpc", "--out", "{csv}/x.json"], "is a file"),
    (["mia", "simulate", "fpc", "--seed", "-1"], "seed must be a non-negative integer"),
    (["mia", "simulate", "fpc", "--train", "0"], WHOLE.format(name="train_size", bounds=" >= 1 and <= 999" + TRAIN_SIZE_HINT,
                                                              value=0)),
    (["mia", "simulate", "fpc", "--train", "100000000000"], "train_size must be an integer >= 1 and <= 999"),
    (["mia", "simulate", "fpc", "--train", "abc"], "Invalid value for '--train'"),
    # sizes bounded by memory (71 PiB and 10⁹ pools asked for) and time, before anything is allocated
    (["mia", "simulate", "calibration", "--models", "100000000", "--records", "100000000"],
     "n_records must be an integer >= 2 and <= 5 (with n_models = 100000000: at most 500,000,000 cells"),
    (["mia", "simulate", "calibration", "--records", "99999999999999999999"], "n_records must be an integer >= 2 and"),
    (["mia", "simulate", "fpc", "--repeats", "1000000000"], "n_repeats must be an integer >= 1 and <= 10000"),
    (["mia", "simulate", "fpc", "--models", "100000000", "--pool", "100000000", "--train", "50000000"],
     "n_models must be an integer >= 2 and <= 4 (with pool_size = 100000000"),
    # an option of the other simulation is refused, not ignored
    (["mia", "simulate", "calibration", "--repeats", "3"], "--repeats is an option of `mia simulate fpc` only"),
    (["mia", "simulate", "calibration", "--pool", "100"], "--pool is an option of `mia simulate fpc` only"),
    (["mia", "simulate", "calibration", "--train", "0"], "--train is an option of `mia simulate fpc` only"),
    (["mia", "simulate", "calibration", "--train", "100000000000"], "--train is an option of `mia simulate fpc` only"),
    (["mia", "simulate", "calibration", "--design", "subsets"], "--design is an option of `mia simulate fpc` only"),
    (["mia", "simulate", "calibration", "--pool", "10", "--train", "5"], "--pool and --train are options of `mia "
                                                                          "simulate fpc` only; calibration would ignore"),
    (["mia", "simulate", "fpc", "--records", "100"], "--records is an option of `mia simulate calibration` only"),
    (["mia", "simulate", "fpc", "--fpr", "0.1"], "--fpr is an option of `mia simulate calibration` only"),
    (["mia", "simulate", "fpc", "--records", "100", "--out", "{tmp}/f.json"], "--records is an option of"),
    # -- selfcheck
    (["selfcheck", "--draws", "0"], WHOLE.format(name="draws", bounds=DRAWS, value=0)),
    (["selfcheck", "--draws", "-1"], WHOLE.format(name="draws", bounds=DRAWS, value=-1)),
    (["selfcheck", "--draws", "100"], WHOLE.format(name="draws", bounds=DRAWS, value=100)),  # too few to conclude
    (["selfcheck", "--draws", "1000000000000"], WHOLE.format(name="draws", bounds=DRAWS, value=10**12)),  # 7.3 TiB
    (["selfcheck", "--draws", "99999999999999999999"], WHOLE.format(name="draws", bounds=DRAWS, value=10**20 - 1)),
    (["selfcheck", "--draws", "1e3"], "Invalid value for '--draws'"),
    (["selfcheck", "--draws", "abc"], "Invalid value for '--draws'"),
    (["selfcheck", "--draws", ""], "Invalid value for '--draws'"),
    (["selfcheck", "--full", "--draws", "3000"], "full runs 100,000 draws per database, so it takes no draws"),
    (["selfcheck", "--full", "--draws", "100"], "full runs 100,000 draws per database, so it takes no draws"),
    (["selfcheck", "--full=yes"], "Option '--full' does not take a value"),
    (["selfcheck", "--seed", "-1"], "seed must be an integer >= 0"),
    (["selfcheck", "--frobnicate"], "No such option: --frobnicate"),
    # -- ledger (a read-only view: it must not even create FILE.lock)
    (["ledger", "{tmp}/missing.json"], "does not exist; dpaudit fairness --ledger FILE --total-budget EPS creates one"),
    (["ledger", "{tmp}"], "is a folder, not a ledger file"),
    (["ledger", "{tmp}/notes.txt"], "is corrupt (not valid JSON"),
    (["ledger", "{csv}"], "is corrupt (not valid JSON"),
    (["ledger", "/dev/null"], "is not a regular file"),
    (["ledger"], "Missing argument 'PATH'"),
    # -- mia audit-dp (the first refusal each: before any model is trained, nothing written)
    (AUDIT, "Missing option '--epsilon'"),
    (AUDIT + ["--epsilon", "0"], "epsilon must be a finite number > 0"),
    (AUDIT + ["--epsilon", "nan"], "epsilon must be a finite number > 0"),
    (AUDIT + ["--epsilon", "1", "--delta", "1"], "delta must be a finite number"),
    (AUDIT + ["--epsilon", "1", "--level", "2"], "level must be a number strictly between 0 and 1"),
    (AUDIT + ["--epsilon", "1", "-m", "1"], "m must be an integer >= 2"),
    (AUDIT + ["--epsilon", "1", "-m", "500"], "leaves no base set"),
    (AUDIT + ["--epsilon", "1", "--models", "0"], "models must be an integer >= 1"),
    (AUDIT + ["--epsilon", "1", "--seed", "-1"], "seed must be an integer >= 0"),
    (AUDIT + ["--epsilon", "1", "--canaries", "nope"], "canaries must be one of"),
    (AUDIT + ["--epsilon", "1", "--canaries", "vulnerable"], "give vulnerability (one number per record)"),
    (AUDIT + ["--epsilon", "1", "--vulnerability", "{tmp}/notes.txt"], "--vulnerability chooses the canaries"),
    (AUDIT + ["--epsilon", "1", "--canaries", "vulnerable", "--vulnerability", "{tmp}/notes.txt"],
     "no 'vulnerability' column"),
    (AUDIT + ["--epsilon", "1", "--canaries", "vulnerable", "--vulnerability", "{tmp}/absent.csv"], "absent.csv"),
    (AUDIT + ["--epsilon", "1", "--learner", "nope"], "nope"),
    (AUDIT + ["--epsilon", "1", "--learner", "no_such_module_xyz:f"], "no_such_module_xyz"),
    (AUDIT + ["--epsilon", "1", "-o", "{tmp}/r.pdf"], "cannot tell the format"),
    (AUDIT + ["--epsilon", "1", "-j", "0"], "n_jobs must be a non-zero whole number"),
    (["mia", "audit-dp", "--data", "{csv}", "--label", "y", "--epsilon", "1"], "pass a schema"),
    (["mia", "audit-dp", "--data", "{csv}", "--epsilon", "1", "--schema", "{schema}"], "name the label column"),
    (["mia", "audit-dp", "--data", "nope", "--epsilon", "1"], "'nope' is neither a registered dataset"),
    (["mia", "audit-dp", "--data", "{csv}", "--label", "y", "--schema", "{tmp}/notes.txt", "--epsilon", "1"], "schema"),
]


@pytest.fixture(scope="module")
def scores_file(tmp_path_factory):
    from dpaudit.mia.simulate import gaussian_scores

    path = tmp_path_factory.mktemp("scores") / "s.npz"
    gaussian_scores(16, 50, seed=0).to_scoreset().save(path)
    return path


@pytest.mark.parametrize("argv, fragment", CASES, ids=[" ".join(a)[:60] for a, _ in CASES])
def test_hostile_option_gives_one_line_and_writes_nothing(cli, workdir, small_csv, scores_file, argv, fragment):
    csv, schema, _ = small_csv
    (workdir / "notes.txt").write_text("not data")
    before = files_in(workdir)
    args = [a.format(csv=csv, schema=schema, tmp=workdir, scores=scores_file) for a in argv]
    result = cli(*args)
    assert_one_line_error(result, fragment=fragment)
    assert files_in(workdir) == before  # nothing written, no temporary file left


@pytest.mark.parametrize("argv", [
    ["repair-wcnf", "{csv}", "-c", "sex ⊥ y", "--schema", "{schema}", "-o", "{tmp}/locked/out.wcnf"],
    ["mia", "simulate", "calibration", "--models", "8", "--out", "{tmp}/locked/sim.npz"],
    ["mia", "train", "{tmp}/locked/run", "--models", "6", "--pool", "100"],
    FAIR + ["--exact", "--save", "{tmp}/locked/r.txt"],
    ["mia", "audit-dp", "--epsilon", "1", "-o", "{tmp}/locked/r.json"],
], ids=["repair-wcnf", "simulate", "train", "fairness --save", "audit-dp -o"])
def test_read_only_output_folder_is_refused_before_work(cli, workdir, small_csv, monkeypatch, argv):
    """os.access is patched: as root, chmod cannot make a folder read-only."""
    import os

    csv, schema, _ = small_csv
    locked = workdir / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(locked) else real_access(p, mode, **kw))
    before = files_in(workdir)
    result = cli(*[a.format(csv=csv, schema=schema, tmp=workdir) for a in argv])
    assert_one_line_error(result, fragment="is not writable")
    assert files_in(workdir) == before


#: Ledger files a user may have edited or damaged: ``dpaudit ledger`` refuses each and creates nothing.
_LEDGER = '{{"format": "dpaudit.ledger", "version": 1, "total_epsilon": {total}, "entries": [{entries}]}}'
_ENTRY = '{{"id": "{id}", "label": "tvd", "epsilon": {eps}, "time": "2025-01-01T00:00:00+00:00", "pid": 1}}'
LEDGER_FILES = {
    "spent > total": (_LEDGER.format(total=0.5, entries=_ENTRY.format(id="0" * 32, eps=1.0)),
                      "its entries spend epsilon=1, more than its total_epsilon=0.5; it was edited"),
    "two entries over the total": (_LEDGER.format(total=1, entries=", ".join(_ENTRY.format(id=c * 32, eps=0.6)
                                                                             for c in "01")),
                                   "its entries spend epsilon=1.2, more than its total_epsilon=1"),
    "negative spend": (_LEDGER.format(total=1, entries=_ENTRY.format(id="0" * 32, eps=-0.5)),
                       "entry 0 has epsilon -0.5, not a positive number"),
    "zero total": (_LEDGER.format(total=0, entries=""), "total_epsilon is 0, not a positive number"),
    "invalid JSON": ('{"format": "dpaudit.ledger", ', "is corrupt (not valid JSON"),
    "NaN spend": (_LEDGER.format(total=1, entries=_ENTRY.format(id="0" * 32, eps="NaN")), "is corrupt (not valid JSON"),
    "latin-1 bytes": (b'{"label": "caf\xe9"}', "is corrupt (it is not UTF-8 text)"),
    "not a ledger": ('{"hello": 1}', "is not a dpaudit ledger"),
    "other version": ('{"format": "dpaudit.ledger", "version": 9}', "has version 9, but this dpaudit reads version 1"),
}


@pytest.mark.parametrize("case", list(LEDGER_FILES))
def test_hostile_ledger_file_gives_one_line_and_creates_nothing(cli, workdir, case):
    content, fragment = LEDGER_FILES[case]
    path = workdir / "ledger.json"
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    before = files_in(workdir)
    assert_one_line_error(cli("ledger", path), fragment=fragment)
    assert files_in(workdir) == before  # no ledger.json.lock, no temporary
