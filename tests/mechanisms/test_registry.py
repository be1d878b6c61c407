"""The mechanism registry: every table derived from it agrees, and calibration never overshoots.

Round trip per registered name: CLI flags → accounting spec → profile, the same profile as the
spec's builder called directly; the auditor's reference simulator claims its class's profile;
the profile of a lattice mechanism is its spec's profile (Canonne, Kamath & Steinke 2020:
the discrete Laplace and Gaussian release exactly those), and a snapped real mechanism's is at
least the ideal one (the grid only inflates the sensitivity). Calibration is checked against
closed forms: Laplace ε = Δ/b (Dwork, McSherry, Nissim & Smith 2006), the geometric
mechanism's ε = m/b in lattice units (Ghosh, Roughgarden & Sundararajan 2009) and the analytic
Gaussian δ(ε) (Balle & Wang 2018, Theorem 8), computed here with scipy.
"""

from __future__ import annotations

import json
import math
from typing import Any

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from infodp.accounting.spec import MECHANISMS as SPECS
from infodp.accounting.spec import profile_from_spec, profile_to_spec
from infodp.audit.auditor import REFERENCE_MECHANISMS, reference_mechanism
from infodp.cli._mechanism_flags import dest, flag, mechanism_spec
from infodp.cli.accounting import account
from infodp.cli.audit import audit_command
from infodp.cli.explain import explain_command
from infodp.cli.mechanisms import calibrate as calibrate_command
from infodp.errors import ParameterError
from infodp.mechanisms.registry import PARAMETERS, REGISTRY, calibrate, calibrated

#: A value of every parameter (a whole number where a mechanism needs one).
EXAMPLE: dict[str, Any] = {
    "scale": 2.0,
    "sigma": 3.0,
    "sensitivity": 2,
    "noise_multiplier": 1.5,
    "sampling_rate": 0.01,
    "sigma_units": 5.0,
    "mu_units": 1,
    "epsilon": 0.5,
    "utility_sensitivity": 1.0,
    "k": 3,
    "delta": 1e-6,
}
SPEC_NAMES = [n for n, r in REGISTRY.items() if r.has_spec]


def _options(command: click.Command) -> set[str]:
    return {p.name for p in command.params if p.name is not None}


def _same(a: Any, b: Any) -> bool:
    return bool(
        a.pure_epsilon() == b.pure_epsilon()
        and a.rdp(2.0) == b.rdp(2.0)
        and a.delta(0.5) == pytest.approx(b.delta(0.5), rel=1e-12, abs=1e-300)
    )


def test_the_registry_covers_the_accounting_spec_exactly() -> None:
    assert set(SPECS) == set(SPEC_NAMES)
    for name in SPEC_NAMES:
        _, required, optional = SPECS[name]
        assert REGISTRY[name].parameters == (*required, *optional)
        assert REGISTRY[name].required == required
    assert set(REFERENCE_MECHANISMS) == {n for n, r in REGISTRY.items() if r.reference}


def test_every_parameter_has_a_flag_on_the_commands_that_take_it() -> None:
    spec_params = {p for n in SPEC_NAMES for p in REGISTRY[n].parameters}
    assert spec_params <= set(PARAMETERS)
    assert {dest(p) for p in spec_params} <= _options(account)
    assert {dest(p) for p in spec_params if p != "epsilon"} | {"epsilon"} <= _options(
        explain_command
    )
    reference = {p for params in REFERENCE_MECHANISMS.values() for p in params}
    assert {dest(p) for p in reference} <= _options(audit_command)
    mech = next(p for p in calibrate_command.params if p.name == "mechanism")
    assert isinstance(mech.type, click.Choice)
    assert tuple(mech.type.choices) == calibrated()


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_cli_flags_round_trip_to_the_spec_builders_profile(name: str) -> None:
    row = REGISTRY[name]
    values = {p: EXAMPLE[p] for p in row.parameters}
    if "sensitivity" in values and "sensitivity" not in row.integers:
        values["sensitivity"] = float(values["sensitivity"])
    flags = {dest(p): v for p, v in values.items()}
    spec = mechanism_spec(name, **flags, steps=3)
    assert spec == {"mechanism": name, **values, "count": 3}
    builder = SPECS[name][0]
    direct = builder(**values).repeat(3)
    assert _same(profile_from_spec(spec), direct)
    # … and the profile's own spec reads back to the same profile.
    once = builder(**values)
    assert _same(profile_from_spec(profile_to_spec(once)), once)


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_a_missing_or_foreign_flag_is_refused(name: str) -> None:
    row = REGISTRY[name]
    if row.required:
        with pytest.raises(ParameterError, match="needs"):
            mechanism_spec(name)
    foreign = next(p for p in PARAMETERS if p not in row.parameters)
    values = {dest(p): EXAMPLE[p] for p in (*row.parameters, foreign)}
    with pytest.raises(ParameterError, match="does not take"):
        mechanism_spec(name, **values)


@pytest.mark.parametrize("name", list(REFERENCE_MECHANISMS))
def test_the_auditor_claims_the_registered_class_profile(name: str) -> None:
    row = REGISTRY[name]
    params = {p: float(EXAMPLE[p]) for p in row.reference}
    _, claimed, d0, d1 = reference_mechanism(name, **params)
    cls = row.mechanism
    assert cls is not None
    built = {p: (int(v) if p in row.integers else v) for p, v in params.items()}
    own = cls(**built).profile()  # type: ignore[call-arg]
    assert _same(claimed, own)
    assert d0 == [0.0] and d1 == ([1.0] if name == "randomized-response" else [2.0])
    if row.has_spec:
        ideal = SPECS[name][0](**built)
        if "sensitivity" in row.integers or name == "randomized-response":
            assert _same(own, ideal)  # the lattice releases exactly the spec's mechanism
        else:
            assert own.pure_epsilon() >= ideal.pure_epsilon()
            assert own.delta(0.5) >= ideal.delta(0.5) * (1 - 1e-9)


def test_every_class_row_names_a_class_taking_its_parameters() -> None:
    for name, row in REGISTRY.items():
        cls = row.mechanism
        if cls is None:
            assert name in ("pure-dp", "approximate-dp", "discrete-subsampled-gaussian")
            continue
        fields = set(cls.__dataclass_fields__)  # type: ignore[attr-defined]
        assert set(row.reference) <= fields
        if not row.has_spec:
            assert set(row.parameters) <= fields


def _analytic_delta(sigma: float, eps: float, sens: float) -> float:
    # Balle & Wang 2018, Theorem 8: δ(ε) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ).
    a, b = sens / (2 * sigma), eps * sigma / sens
    return float(stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b))


EPS = st.floats(min_value=0.05, max_value=4.0)
SENS = st.floats(min_value=0.1, max_value=100.0)
WHOLE = st.integers(min_value=1, max_value=20)
DELTA = st.floats(min_value=1e-9, max_value=1e-2)


@settings(max_examples=30, deadline=None)
@given(EPS, SENS)
def test_laplace_calibration_never_overshoots(eps: float, sens: float) -> None:
    c = calibrate("laplace", eps, 0.0, sens)
    assert sens / c["scale"] <= eps
    r = c["release"]
    # The lattice release is geometric with m = integer_sensitivity units of the grid.
    assert r["integer_sensitivity"] * r["grid"] / r["scale"] <= eps
    assert r["epsilon"] <= eps


@settings(max_examples=30, deadline=None)
@given(EPS, WHOLE)
def test_discrete_laplace_calibration_never_overshoots(eps: float, sens: int) -> None:
    c = calibrate("discrete-laplace", eps, 0.0, sens)
    assert sens / c["scale"] <= eps and c["release"]["epsilon"] <= eps


@settings(max_examples=20, deadline=None)
@given(EPS, SENS, st.integers(min_value=2, max_value=10))
def test_pure_calibrations_never_overshoot(eps: float, sens: float, k: int) -> None:
    for name in ("staircase", "exponential", "randomized-response"):
        c = calibrate(name, eps, 0.0, sens, k=k)
        assert c["release"]["epsilon"] <= eps
    rr = calibrate("randomized-response", eps, 0.0, sens, k=k)
    # keep/other = e^ε exactly (Warner 1965; Kairouz, Oh & Viswanath 2014) up to rounding.
    other = (1 - rr["keep_probability"]) / (k - 1)
    assert math.log(rr["keep_probability"] / other) <= eps * (1 + 1e-12)


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(EPS, DELTA, SENS)
def test_gaussian_calibration_never_overshoots(eps: float, delta: float, sens: float) -> None:
    c = calibrate("gaussian", eps, delta, sens)
    assert _analytic_delta(c["sigma"], eps, sens) <= delta * (1 + 1e-9)
    assert c["release"]["delta_at_epsilon"] <= delta
    assert c["release"]["sigma"] >= c["sigma"]


@settings(max_examples=8, deadline=None)
@given(EPS, DELTA, WHOLE)
def test_discrete_gaussian_calibration_never_overshoots(
    eps: float, delta: float, sens: int
) -> None:
    c = calibrate("discrete-gaussian", eps, delta, sens)
    assert c["release"]["delta_at_epsilon"] <= delta


@settings(max_examples=3, deadline=None)
@given(st.floats(min_value=0.5, max_value=4.0), st.integers(min_value=1, max_value=20))
@pytest.mark.slow  # seconds of CPU: out of the quick tier
def test_subsampled_gaussian_calibration_never_overshoots(eps: float, steps: int) -> None:
    c = calibrate("subsampled-gaussian", eps, 1e-5, 1.0, sampling_rate=0.01, steps=steps)
    assert c["release"]["epsilon_at_delta"] <= eps


def test_unknown_names_are_refused_with_the_allowed_ones() -> None:
    with pytest.raises(ParameterError, match="one of laplace, gaussian"):
        calibrate("pure-dp", 1.0)
    with pytest.raises(ParameterError, match="delta"):
        calibrate("gaussian", 1.0, 0.0)


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_infodp_account_takes_every_registered_parameter_as_a_flag(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from infodp.cli import main

    row = REGISTRY[name]
    values = {p: EXAMPLE[p] for p in row.parameters}
    args = ["account", "--mechanism", name, "--json", "--interval", "1e-3"]
    for p, v in values.items():
        args += [flag(p), str(v)]
    assert main(args) == 0
    payload = json.loads(capsys.readouterr().out)
    if "sensitivity" in values and "sensitivity" not in row.integers:
        values["sensitivity"] = float(values["sensitivity"])
    assert payload["spec"] == {"mechanism": name, **values}
    pure = SPECS[name][0](**values).pure_epsilon()
    assert payload["epsilon_pure"] == (pure if math.isfinite(pure) else "inf")
