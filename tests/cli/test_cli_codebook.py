"""``release --check`` against a public codebook, and the domain advice of the command line (issue 13 item 10).

Run as subprocesses, the way users run the command. The preflight reads the
spec, the public codebook and the input's header only: a category that matches
no codebook value is reported (status 2, nothing written or charged), a column
without ``categories`` gets the Python API's advice in the spec's form, and the
release itself says nothing about which categories occur in the data.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

import pandas_dp as pdp
from pandas_dp.data import load_persons
from _cli import run

ROOT = Path(__file__).resolve().parents[2]
STATES = ["Avalon", "Borealis", "Cascadia", "Dunmore", "Estoria"]
CODEBOOK = "column,value\n" + "".join(f"state,{s}\n" for s in STATES) + "sex,F\nsex,M\nhousehold_id,1\n"




@pytest.fixture(scope="module")
def persons(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "persons.csv"
    load_persons().to_csv(path, index=False)
    return path


def _folder(tmp_path: Path, persons: Path, releases: str, *, codebook: str | None = CODEBOOK,
            data: Path | None = None) -> Path:
    (tmp_path / "persons.csv").symlink_to(data or persons)
    line = ""
    if codebook is not None:
        (tmp_path / "codebook.csv").write_text(codebook)
        line = 'codebook = "codebook.csv"\n'
    (tmp_path / "spec.toml").write_text(
        f'seed = 1\n[budget]\nepsilon = 1.0\nledger = "ledger.sqlite"\n[input]\npath = "persons.csv"\n{line}'
        f'[output]\ndir = "released"\n{releases}')
    pdp.Ledger.create(tmp_path / "ledger.sqlite")
    return tmp_path


def _release(name: str, columns: str, extra: str = "") -> str:
    return f'[[release]]\nname = "{name}"\nmethod = "identity"\ncolumns = {columns}\n{extra}epsilon = 0.2\n'


def _nothing_written(folder: Path) -> None:
    assert not (folder / "released").exists()
    with sqlite3.connect(folder / "ledger.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM pandas_dp_entries").fetchone() == (0,)
        assert conn.execute("SELECT COUNT(*) FROM pandas_dp_budgets").fetchone() == (0,)


def test_columns_without_categories_get_the_python_advice_and_the_codebook_values(tmp_path, persons):
    # 'sex' is not in this codebook: the library's advice; 'state' is: its values, ready to paste.
    codebook = "column,value\n" + "".join(f"state,{s}\n" for s in STATES)
    folder = _folder(tmp_path, persons, _release("sex", '"sex"') + _release("states", '"state"'), codebook=codebook)
    done = run("release", "--check", str(folder / "spec.toml"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "(2 problem(s)); only the input's header (its column names) was read, and nothing was charged" in done.stderr
    # The library's own words (tests/test_messages.py), then their form in the spec.
    for phrase in ("'sex'", "categories=[...]", "never derives the domain from the data",
                   "In the spec's [[release]] table: column 'sex': add categories = [\"label\", ...]"):
        assert phrase in done.stderr, (phrase, done.stderr)
    assert done.stderr.index("categories = [") < done.stderr.index("bins = [edges]")
    assert ("column 'state' is coded in the codebook: add categories = "
            '["Avalon", "Borealis", "Cascadia", "Dunmore", "Estoria"] (its 5 values)') in done.stderr
    _nothing_written(folder)


def test_a_category_the_codebook_does_not_list_is_reported_by_check(tmp_path, persons):
    cats = '["Avalon", "Borealis", "Casadia", "Dunmore", "Estoria", "Atlantis"]'
    grid = ('[[release]]\nname = "grid"\nmethod = "dpcube"\ncolumns = ["sex", "age"]\n'
            'categories = {sex = ["F", "M", "X"]}\nbins = {age = [0, 50, 100]}\nepsilon = 0.2\n')
    folder = _folder(tmp_path, persons, _release("states", '"state"', f"categories = {cats}\n") + grid)
    done = run("release", "--check", str(folder / "spec.toml"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "(2 problem(s)); only the input's header (its column names) was read, and nothing was charged" in done.stderr
    assert ("[[release]] 'states': categories 'Casadia' (did you mean 'Cascadia'?), 'Atlantis' of column 'state' "
            "match no value of the codebook 'codebook.csv', which lists 5 for it") in done.stderr
    assert "[[release]] 'grid': categories 'X' of column 'sex' match no value" in done.stderr
    _nothing_written(folder)
    # A real run does the same preflight: refused before any row is read or anything charged.
    assert run("release", str(folder / "spec.toml")).returncode == 2
    _nothing_written(folder)


def test_numbers_and_text_match_the_codebook_by_value_and_by_categories_are_checked(tmp_path, persons):
    codebook = CODEBOOK + "household_id,2\n"
    by_state = ('[[release]]\nname = "ages_by_state"\nmethod = "identity"\ncolumns = "age"\nbins = [0, 50, 100]\n'
                'by = "state"\nby_categories = ["Avalon", "Borealis", "Cascadia", "Dunmore", "Estonia"]\n'
                'epsilon = 0.2\n')
    folder = _folder(tmp_path, persons, _release("a", '"state"', f"categories = {STATES!r}\n".replace("'", '"'))
                     + _release("b", '"household_id"', "categories = [1, 2.0, 7]\n") + by_state, codebook=codebook)
    done = run("release", "--check", str(folder / "spec.toml"))
    # Only 7 and 'Estonia' are unknown: the state names match as text, 1 and 2.0 match "1" and "2" as numbers.
    assert done.returncode == 2 and "(2 problem(s))" in done.stderr, done.stderr
    assert "[[release]] 'b': categories 7 of column 'household_id' match no value" in done.stderr
    assert ("[[release]] 'ages_by_state': by_categories 'Estonia' (did you mean 'Estoria'?) of column 'state' "
            "match no value of the codebook") in done.stderr
    _nothing_written(folder)


@pytest.mark.parametrize("codebook, phrase", [
    ("state,Avalon\n", "must have the columns 'column' and 'value'"),
    pytest.param(None, "[input] codebook 'missing.csv' not found", marks=pytest.mark.slow),  # a spec check
])
def test_a_bad_codebook_file_is_a_spec_error(tmp_path, persons, codebook, phrase):
    folder = _folder(tmp_path, persons, _release("states", '"state"', f"categories = {STATES!r}\n".replace("'", '"')),
                     codebook=codebook or "")
    if codebook is None:
        text = (folder / "spec.toml").read_text().replace('codebook = "codebook.csv"', 'codebook = "missing.csv"')
        (folder / "spec.toml").write_text(text)
    done = run("release", "--check", str(folder / "spec.toml"))
    assert done.returncode == 2 and phrase in done.stderr and "Traceback" not in done.stderr
    _nothing_written(folder)


def test_the_release_says_nothing_about_categories_absent_from_the_data(tmp_path, persons):
    """Boundary rule: with or without any Estoria row, the run prints the same and releases the same shape."""
    data = pd.read_csv(persons)
    without = tmp_path / "without.csv"
    data[data["state"] != "Estoria"].to_csv(without, index=False)
    cats = f"categories = {STATES!r}\n".replace("'", '"')
    outputs = []
    for name, source in (("all", persons), ("without", without)):
        folder = tmp_path / name
        folder.mkdir()
        _folder(folder, persons, _release("states", '"state"', cats), data=source)
        done = run("release", str(folder / "spec.toml"))
        assert done.returncode == 0, done.stderr
        table = pd.read_csv(folder / "released" / "states.csv")
        assert table["state"].tolist() == STATES
        outputs.append((done.stdout.replace(str(folder), "<dir>"), done.stderr))
    assert outputs[0] == outputs[1]



def test_one_preflight_reports_every_problem_of_every_stage_and_release(tmp_path, persons):
    """Issue 29 item 7: a codebook typo, a bins typo and a column typo in two releases, all in one run."""
    from pandas_dp.cli.run import run_release
    from pandas_dp.cli.spec import SpecError

    cats = '["Avalon", "Borealis", "Casadia", "Dunmore", "Estoria"]'
    folder = _folder(tmp_path, persons, _release("states", '"state"', f"categories = {cats}\n")
                     + _release("ages", '"agee"', "bins = [0, 50, 30]\ncolour = 1\n")
                     + _release("incomes", '"income"', "bins = [0, 50000, 600000]\n"))
    for check_only in (True, False):
        with pytest.raises(SpecError) as caught:
            run_release(folder / "spec.toml", check_only=check_only)
        problems = caught.value.problems
        assert caught.value.read == "header" and len(problems) == 4, problems
        unknown, bins, codebook, column = problems  # the stages in order: spec, rehearsal, codebook, header
        assert unknown.startswith("[[release]] 'ages': unknown key 'colour'")
        assert bins.startswith("[[release]] 'ages': DomainError:") and "strictly increasing" in bins
        assert codebook.startswith("[[release]] 'states': categories 'Casadia' (did you mean 'Cascadia'?)")
        assert column.startswith("[[release]] 'ages': columns ['agee'] not in the input")
        assert "Fix 'columns' in the spec" in column and "of the spec's columns it holds ['income', 'state']" in column
        _nothing_written(folder)


def test_a_column_typo_names_its_release_and_key_and_a_spelling_the_spec_declares(tmp_path, persons):
    from pandas_dp.cli.preflight import header_problems
    from pandas_dp.cli.spec import load_spec

    by_state = ('[[release]]\nname = "by_state"\nmethod = "identity"\ncolumns = "age"\nbins = [0, 50, 100]\n'
                'by = "stat"\nby_categories = ["Avalon"]\nprivacy_unit = "pid"\nmax_rows = 2\nepsilon = 0.2\n')
    folder = _folder(tmp_path, persons, _release("states", '"state"', 'categories = ["Avalon"]\n') + by_state,
                     codebook=None)
    spec = load_spec(folder / "spec.toml")
    by, unit = header_problems(spec, ["age", "state", "x"])
    assert by.startswith("[[release]] 'by_state': by ['stat'] not in the input") and "did you mean 'state'?" in by
    assert unit.startswith("[[release]] 'by_state': privacy_unit ['pid'] not in the input") and "'x'" not in unit
    assert header_problems(spec, ["age", "state", "stat", "pid"]) == []


def test_a_spec_whose_budget_is_broken_still_gets_its_releases_and_header_checked(tmp_path, persons):
    from pandas_dp.cli.run import run_release
    from pandas_dp.cli.spec import SpecError

    folder = _folder(tmp_path, persons, _release("ages", '"agee"', "bins = [0, 50, 100]\n")
                     + _release("sexes", '"sex"'), codebook=None)
    spec = folder / "spec.toml"
    spec.write_text(spec.read_text().replace("epsilon = 1.0\n", "", 1))  # [budget] has no total
    with pytest.raises(SpecError) as caught:
        run_release(spec, check_only=True)
    budget, advice, column = caught.value.problems
    assert budget.startswith("[budget]: give exactly one of 'epsilon'")
    assert advice.startswith("[[release]] 'sexes': DomainError") and "add categories" in advice
    assert column.startswith("[[release]] 'ages': columns ['agee'] not in the input")
    # The header holds 'sex', a column of the spec: it is a line of names, whose closest one is the hint.
    assert "did you mean 'age'?" in column
    _nothing_written(folder)


def test_a_spelling_hint_names_a_column_of_the_files_header_not_of_the_spec(tmp_path):
    """Issue 44.7: ``rcae`` was hinted as ``grade`` (a column of the spec) when the header has ``race``."""
    from pandas_dp.cli.run import run_release
    from pandas_dp.cli.spec import SpecError

    pupils = pd.DataFrame({"race": ["A", "B", "C"], "grade": [1, 2, 3], "sex": ["F", "M", "F"]})
    pupils.to_csv(tmp_path / "pupils.csv", index=False)
    folder = _folder(tmp_path, tmp_path / "pupils.csv", _release("races", '"rcae"', 'categories = ["A", "B"]\n')
                     + _release("grades", '"grade"', "bins = [0, 5, 10]\n"), codebook=None)
    for check_only in (True, False):
        with pytest.raises(SpecError) as caught:
            run_release(folder / "spec.toml", check_only=check_only)
        (column,) = caught.value.problems
        assert column.startswith("[[release]] 'races': columns ['rcae'] not in the input")
        assert "Spelling: 'rcae' (did you mean 'race'?)" in column and "'grade'?" not in column
    _nothing_written(folder)
    # A first line that holds none of the spec's columns may be a data row (exported without its header): no hint.
    from pandas_dp.cli.preflight import header_problems
    from pandas_dp.cli.spec import load_spec

    races, grades = header_problems(load_spec(folder / "spec.toml"), ["race", "gr4de"])
    for text in (races, grades):
        assert "did you mean" not in text and "'race'" not in text and "gr4de" not in text
