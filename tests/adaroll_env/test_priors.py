"""Tests of adaroll_env.priors: profiles, difficulty specs, Beta fits, drift, sampling."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy import integrate, stats

from adaroll_env.priors import (
    DEFAULT_PROFILE,
    PROFILES,
    BetaMixture,
    EmpiricalPassRates,
    apply_drift,
    fit_beta,
    list_profiles,
    resolve_difficulty,
)


def test_profiles_exist():
    assert {"uniform", "u-shaped", "hard", "easy", "rlvr"} <= set(PROFILES)
    assert list_profiles() == sorted(PROFILES)
    assert DEFAULT_PROFILE == "rlvr"
    assert PROFILES["uniform"].components == ((1.0, 1.0, 1.0),)
    assert PROFILES["u-shaped"].components == ((1.0, 0.3, 0.3),)
    assert PROFILES["hard"].moment(1) < 0.5 < PROFILES["easy"].moment(1)


def test_degenerate_probability_hand_worked():
    # Beta(1, 1): E[p^8] = E[(1-p)^8] = 1/9
    assert PROFILES["uniform"].degenerate_probability(8) == pytest.approx(2 / 9, rel=1e-12)
    # Beta(1, 4): E[(1-p)^8] = B(1, 12)/B(1, 4) = 4/12; E[p^8] = 4·8!·3!/12!
    want = 4 / 12 + 4 * math.factorial(8) * math.factorial(3) / math.factorial(12)
    assert PROFILES["hard"].degenerate_probability(8) == pytest.approx(want, rel=1e-12)
    assert PROFILES["easy"].degenerate_probability(8) == pytest.approx(want, rel=1e-12)
    # n = 1: every single rollout is degenerate
    assert PROFILES["rlvr"].degenerate_probability(1) == pytest.approx(1.0, abs=1e-12)


def test_rlvr_calibration():
    d = PROFILES["rlvr"]
    got = d.degenerate_probability(8)
    assert 0.37 <= got <= 0.43
    # hard tail near 0, solved tail near 1, broad middle
    assert any(a / (a + b) < 0.1 for _, a, b in d.components)
    assert any(a / (a + b) > 0.9 for _, a, b in d.components)
    assert d.moment(1) == pytest.approx(sum(w * a / (a + b) for w, a, b in d.components), rel=1e-12)


def test_rlvr_calibration_by_quadrature():
    d = PROFILES["rlvr"]
    total = 0.0
    for w, a, b in d.components:

        def integrand(p, a=a, b=b):
            return (p**8 + (1 - p) ** 8) * stats.beta.pdf(p, a, b)

        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an IntegrationWarning would fail the test
            parts = [
                integrate.quad(integrand, lo, hi, limit=200) for lo, hi in ((0, 0.5), (0.5, 1))
            ]
        total += w * sum(v for v, _ in parts)
        assert all(err < 1e-8 for _, err in parts)
    assert total == pytest.approx(d.degenerate_probability(8), abs=1e-7)
    assert 0.37 <= total <= 0.43


def test_rlvr_calibration_by_monte_carlo():
    d = PROFILES["rlvr"]
    rng = np.random.default_rng(2024)
    n = 200_000
    p = d.sample(rng, n)
    k = rng.binomial(8, p)
    degenerate = ((k == 0) | (k == 8)).astype(float)
    mc, se = degenerate.mean(), degenerate.std(ddof=1) / math.sqrt(n)
    assert abs(mc - d.degenerate_probability(8)) < 4 * se
    assert 0.37 <= mc <= 0.43


# --- resolve_difficulty -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["uniform", "u-shaped", "hard", "easy", "rlvr"])
def test_resolve_names(name):
    assert resolve_difficulty(name) is PROFILES[name]


def test_resolve_pair_and_mixture():
    d = resolve_difficulty((2, 3))
    assert isinstance(d, BetaMixture)
    assert d.components == ((1.0, 2.0, 3.0),)
    assert resolve_difficulty([0.5, 4.0]).components == ((1.0, 0.5, 4.0),)
    assert resolve_difficulty((np.float32(2.0), np.int64(3))).components == ((1.0, 2.0, 3.0),)
    mix = resolve_difficulty([(1, 1, 2), (3, 3, 4)])
    assert mix.components == ((0.25, 1.0, 2.0), (0.75, 3.0, 4.0))  # weights normalised
    assert mix.moment(1) == pytest.approx(0.25 * 1 / 3 + 0.75 * 3 / 7)
    built = BetaMixture(((1.0, 2.0, 2.0),))
    assert resolve_difficulty(built) is built


def test_resolve_array():
    d = resolve_difficulty(np.array([0.0, 0.25, 1.0, 0.5]))
    assert isinstance(d, EmpiricalPassRates)
    assert d.rates == (0.0, 0.25, 1.0, 0.5)
    assert d.moment(1) == pytest.approx(0.4375)
    assert d.degenerate_probability(2) == pytest.approx(np.mean([1.0, 0.25**2 + 0.75**2, 1.0, 0.5]))
    assert resolve_difficulty(np.array([[0.1, 0.2], [0.3, 0.4]])).rates == (0.1, 0.2, 0.3, 0.4)


def test_resolve_text_file(tmp_path):
    path = tmp_path / "rates.txt"
    path.write_text("# pass rates from a run\n0.1, 0.2 0.3\n\n0.4,0.5  # trailing comment\n1\n")
    d = resolve_difficulty(path)
    assert isinstance(d, EmpiricalPassRates)
    assert d.rates == (0.1, 0.2, 0.3, 0.4, 0.5, 1.0)
    assert resolve_difficulty(str(path)).rates == d.rates
    csv = tmp_path / "rates.csv"
    csv.write_text("0.5,0.25\n")
    assert resolve_difficulty(csv).rates == (0.5, 0.25)


def test_resolve_json_files(tmp_path):
    lst = tmp_path / "a.json"
    lst.write_text(json.dumps([0.0, 0.5, 0.75]))
    assert resolve_difficulty(lst).rates == (0.0, 0.5, 0.75)
    obj = tmp_path / "b.json"
    obj.write_text(json.dumps({"pass_rates": [0.2, 0.4], "model": "tiny"}))
    assert resolve_difficulty(str(obj)).rates == (0.2, 0.4)


def test_resolve_file_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        resolve_difficulty(str(tmp_path / "missing.txt"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        resolve_difficulty(bad)
    nokey = tmp_path / "nokey.json"
    nokey.write_text(json.dumps({"rates": [0.1]}))
    with pytest.raises(ValueError, match="pass_rates"):
        resolve_difficulty(nokey)
    word = tmp_path / "word.txt"
    word.write_text("0.1 abc 0.2\n")
    with pytest.raises(ValueError, match="non-number"):
        resolve_difficulty(word)
    out = tmp_path / "out.txt"
    out.write_text("0.1 1.5\n")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        resolve_difficulty(out)
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    with pytest.raises(ValueError, match="empty"):
        resolve_difficulty(empty)


@pytest.mark.parametrize(
    ("spec", "exc", "match"),
    [
        ((1.0,), ValueError, "neither"),
        ((1.0, 2.0, 3.0), ValueError, "neither"),
        ([], ValueError, "neither"),
        (("a", "b"), ValueError, "neither"),
        ([(1.0, 2.0)], ValueError, "must be \\(weight, a, b\\)"),
        ([(-1.0, 2.0, 2.0)], ValueError, "weight"),
        ((0.0, 1.0), ValueError, "Beta"),
        ((1.0, float("inf")), ValueError, "Beta"),
        (np.array([0.5, -0.1]), ValueError, r"\[0, 1\]"),
        (np.array([0.5, np.nan]), ValueError, r"\[0, 1\]"),
        (np.array([]), ValueError, "empty"),
        (5, TypeError, "difficulty must be"),
        (None, TypeError, "difficulty must be"),
    ],
)
def test_resolve_bad_specs(spec, exc, match):
    with pytest.raises(exc, match=match):
        resolve_difficulty(spec)


def test_resolve_unknown_name_suggests_closest():
    with pytest.raises(ValueError, match="Did you mean 'rlvr'"):
        resolve_difficulty("rlv")
    with pytest.raises(ValueError, match="Did you mean 'u-shaped'"):
        resolve_difficulty("ushaped")
    with pytest.raises(ValueError, match="unknown difficulty profile 'zzzzzz'"):
        resolve_difficulty("zzzzzz")


# --- fit_beta ---------------------------------------------------------------------------------


@pytest.mark.parametrize("ab", [(2.0, 3.0), (0.5, 12.0), (12.0, 0.5), (1.0, 1.0), (0.3, 0.3)])
def test_fit_beta_recovers_single_beta(ab):
    a, b = fit_beta(ab)
    assert a == pytest.approx(ab[0], rel=1e-9)
    assert b == pytest.approx(ab[1], rel=1e-9)


@pytest.mark.parametrize("name", ["rlvr", "u-shaped", "hard"])
def test_fit_beta_matches_mixture_moments(name):
    d = PROFILES[name]
    a, b = fit_beta(name)
    m1, m2 = d.moment(1), d.moment(2)
    assert a / (a + b) == pytest.approx(m1, rel=1e-9)
    assert a * b / ((a + b) ** 2 * (a + b + 1)) == pytest.approx(m2 - m1 * m1, rel=1e-9)
    # and an independent check of the mixture moments against the component formulas
    want_m1 = sum(w * ca / (ca + cb) for w, ca, cb in d.components)
    want_m2 = sum(w * ca * (ca + 1) / ((ca + cb) * (ca + cb + 1)) for w, ca, cb in d.components)
    assert m1 == pytest.approx(want_m1, rel=1e-12)
    assert m2 == pytest.approx(want_m2, rel=1e-12)


def test_fit_beta_empirical():
    rates = np.array([0.1, 0.3, 0.5, 0.6, 0.9])
    a, b = fit_beta(rates)
    assert a / (a + b) == pytest.approx(rates.mean())
    assert a * b / ((a + b) ** 2 * (a + b + 1)) == pytest.approx(rates.var())


@pytest.mark.parametrize(
    "rates", [[0.0, 0.0, 0.0], [1.0, 1.0], [0.0, 1.0, 0.0, 1.0], [0.0], [0.5, 0.5]]
)
def test_fit_beta_degenerate_empirical(rates):
    a, b = fit_beta(np.array(rates))
    assert math.isfinite(a) and math.isfinite(b)
    assert a > 0 and b > 0
    mean = np.mean(rates)
    assert a / (a + b) == pytest.approx(min(max(mean, 1e-4), 1 - 1e-4), abs=1e-12)


# --- apply_drift ------------------------------------------------------------------------------


def test_apply_drift():
    p = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    up = apply_drift(p, 0.5)
    assert up[0] == 0.0 and up[-1] == 1.0
    assert np.all(up[1:-1] > p[1:-1])
    assert apply_drift([0.5], math.log(3.0))[0] == pytest.approx(0.75)
    down = apply_drift(p, -1.0)
    assert down[0] == 0.0 and down[-1] == 1.0
    assert np.all(down[1:-1] < p[1:-1])
    same = apply_drift(p, 0.0)
    np.testing.assert_array_equal(same, p)
    assert same is not p
    # drifts compose additively in logit space
    np.testing.assert_allclose(apply_drift(apply_drift(p, 0.3), 0.4), apply_drift(p, 0.7))


# --- sampling ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec", ["uniform", "u-shaped", "hard", "easy", "rlvr", np.array([0.0, 0.2, 0.9, 1.0])]
)
def test_sample(spec):
    d = resolve_difficulty(spec)
    x = d.sample(np.random.default_rng(5), 20_000)
    assert x.shape == (20_000,)
    assert np.all((x >= 0) & (x <= 1))
    np.testing.assert_array_equal(x, d.sample(np.random.default_rng(5), 20_000))
    assert not np.array_equal(x[:100], d.sample(np.random.default_rng(6), 100))
    se = math.sqrt(d.moment(2) - d.moment(1) ** 2) / math.sqrt(x.size)
    assert abs(x.mean() - d.moment(1)) < 4 * se


def test_empirical_sample_draws_only_given_rates():
    d = EmpiricalPassRates((0.2, 0.7))
    x = d.sample(np.random.default_rng(0), 1000)
    assert set(np.unique(x)) == {0.2, 0.7}


def test_describe():
    assert PROFILES["uniform"].describe() == "Beta(1, 1)"
    assert "Beta(0.5, 12)" in PROFILES["rlvr"].describe()
    assert "3 pass rates" in EmpiricalPassRates((0.1, 0.2, 0.3)).describe()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            "0.2 1.5 0.3",
            r"pass rate 1\.5 \(value 2 of 3\) in file '.*rates\.txt' is not in \[0, 1\]",
        ),
        ("0.2, nan", r"pass rate nan \(value 2 of 2\) in file '.*rates\.txt'"),
        ("-0.1", r"pass rate -0\.1 .*rates\.txt"),
    ],
)
def test_pass_rate_file_errors_name_the_file_and_value(tmp_path, text, match):
    path = tmp_path / "rates.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        resolve_difficulty(str(path))


def test_json_pass_rate_file_with_a_non_number(tmp_path):
    path = tmp_path / "rates.json"
    path.write_text("[0.1, null, 0.5]")
    with pytest.raises(ValueError, match=r"rates\.json'.*value 2 is None"):
        resolve_difficulty(str(path))


def test_mixture_weights_off_one_warn():
    with pytest.warns(UserWarning, match=r"mixture weights sum to 4, not 1: normalised to \[0\.25"):
        resolve_difficulty([(1, 1, 2), (3, 3, 4)])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resolve_difficulty("rlvr")
        resolve_difficulty([(0.25, 1, 2), (0.75, 3, 4)])


@pytest.mark.parametrize("spec", ["beta(0.5,2", "beta(0.5, 2"])
def test_unclosed_beta_is_a_parse_error(spec):
    with pytest.raises(ValueError, match=r"has no closing '\)': write beta\(a, b\)"):
        resolve_difficulty(spec)
