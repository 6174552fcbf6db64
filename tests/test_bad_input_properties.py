"""Property-based: generated manifests and expressions thrown at the loader and at `workbench check`.

Every outcome is exit 0, or exit 2 with one message located at `workbench.toml:LINE` — never a
traceback, never a hang. The manifests are the saxpy example with one value replaced by a
generated TOML value or expression, a line dropped, or a bracket left open.
"""

from __future__ import annotations

import re
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench import expr
from workbench.cli import main
from workbench.project import examples_dir

from .test_bad_input import MAX_EXPRESSION_BYTES, peak_bytes

SAXPY = examples_dir() / "saxpy"
LINES = (SAXPY / "workbench.toml").read_text().splitlines()
VALUE_LINES = [i for i, line in enumerate(LINES) if re.match(r"^[A-Za-z_-]+\s*=", line)]
LOCATED = re.compile(r"^error: .*workbench\.toml:\d+: ", re.MULTILINE)

SETTINGS = settings(
    max_examples=120,
    deadline=None,  # no wall-clock budget (a loaded machine is slow); bounds are asserted in memory
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,  # the same examples on every run: a failure is reproducible
)

FUNCTIONS = sorted(expr.FUNCTIONS)

numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, -1, 64, 65, 2**31, 2**32, 2**63, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
)
leaves = st.one_of(
    numbers.map(repr).map(lambda t: t.replace("inf", "1e999")), st.sampled_from(["n", "zz", "n"])
)


def _combine(children):
    binary = st.tuples(children, st.sampled_from(["+", "-", "*", "/", "//", "%", "**"]), children).map(
        lambda t: f"({t[0]} {t[1]} {t[2]})"
    )
    unary = children.map(lambda c: f"-{c}")
    call = st.tuples(st.sampled_from(FUNCTIONS), st.lists(children, min_size=0, max_size=3)).map(
        lambda t: f"{t[0]}({', '.join(t[1])})"
    )
    return st.one_of(binary, unary, call)


expressions = st.recursive(leaves, _combine, max_leaves=12)
deep = st.tuples(st.sampled_from(["-", "(", "pow2(", "abs("]), st.integers(1, 400)).map(
    lambda t: t[0] * t[1] + "n" + (")" * t[1] if t[0] != "-" else "")
)

toml_values = st.one_of(
    expressions.map(lambda e: '"' + e + '"'),
    deep.map(lambda e: '"' + e + '"'),
    st.sampled_from(["true", "false", "nan", "inf", "-inf", "-5", "0", "1e999", "[]", "{}", '""', "[1, true]"]),
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(['{ kind = "random", low = nan, high = 1.0 }', '{ kind = "linspace", start = 0.0, stop = inf }',
                     '{ kind = "constant", value = 1e300 }', '"\\u0000"', "[256, 256, 256, 256]"]),
)  # fmt: skip


@st.composite
def manifests(draw) -> str:
    lines = list(LINES)
    how = draw(st.sampled_from(["value", "value", "value", "drop", "open"]))
    index = draw(st.sampled_from(VALUE_LINES))
    if how == "value":
        key = lines[index].split("=", 1)[0].rstrip()
        lines[index] = f"{key} = {draw(toml_values)}"
    elif how == "drop":
        del lines[draw(st.integers(0, len(lines) - 1))]
    else:
        lines[index] = lines[index] + draw(st.sampled_from([" [", " {", ' """', " [1,", " ]"]))
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("props") / "saxpy"
    shutil.copytree(SAXPY, root, ignore=shutil.ignore_patterns("target"))
    return root


@SETTINGS
@given(text=manifests())
def test_check_answers_every_manifest_with_0_or_a_located_2(project, capsys, text):
    (project / "workbench.toml").write_text(text)
    code = main(["check", str(project)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code in (0, 2), err
    if code == 2:
        assert LOCATED.search(err), err


@SETTINGS
@given(text=st.one_of(expressions, deep))
def test_expressions_evaluate_or_fail_cleanly(text):
    value, peak = peak_bytes(expr.evaluate, text, {"n": 1024})
    if isinstance(value, Exception):
        assert isinstance(value, expr.ExprError), repr(value)
        assert str(value) and len(str(value)) < 400
    else:
        assert isinstance(value, int | float) and not isinstance(value, bool)
    assert peak < MAX_EXPRESSION_BYTES, peak  # bounded: nothing large computed, whatever the text
