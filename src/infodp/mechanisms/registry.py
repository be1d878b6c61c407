"""The mechanism registry: one row per mechanism name, from which every table is derived.

A row gives the name's mechanism class (if it has one), its parameters (those of the
accounting spec, :data:`infodp.accounting.spec.MECHANISMS`, which stays the pure table of
profile builders one layer down), which of them are integers, the parameters of the
auditor's reference simulator, and the calibration ``infodp calibrate`` reports. The CLI's
option tables (``infodp account``, ``explain``, ``audit``, ``calibrate``) and the auditor's
reference mechanisms are read from here, so adding a mechanism is one row.

>>> REGISTRY["laplace"].mechanism.__name__, REGISTRY["laplace"].parameters
('LaplaceMechanism', ('scale', 'sensitivity'))
>>> [name for name in REGISTRY if REGISTRY[name].reference][:3]
['laplace', 'gaussian', 'discrete-laplace']
>>> calibrate("laplace", 1.0)["scale"]
1.0
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from infodp._validate import as_nonnegative, as_positive, as_positive_int
from infodp.accounting.spec import MECHANISMS as SPECS
from infodp.errors import ParameterError
from infodp.mechanisms.base import Mechanism

__all__ = [
    "PARAMETERS",
    "REGISTRY",
    "Registered",
    "calibrate",
    "calibrated",
    "mechanism_class",
    "referenced",
]

#: Every mechanism parameter, with the one line the CLI shows for it.
PARAMETERS: Mapping[str, str] = MappingProxyType(
    {
        "scale": "Laplace / discrete Laplace noise scale.",
        "sigma": "Gaussian / discrete Gaussian noise σ.",
        "sensitivity": "Sensitivity (default 1).",
        "noise_multiplier": "Subsampled Gaussian noise multiplier.",
        "sampling_rate": "Poisson sampling rate q.",
        "sigma_units": "Discrete subsampled Gaussian: σ in lattice units.",
        "mu_units": "Discrete subsampled Gaussian: sensitivity in lattice units.",
        "epsilon": "The mechanism's own ε (randomized-response, pure-dp, approximate-dp, …).",
        "k": "Number of categories of randomized response.",
        "delta": "δ of an approximate-dp mechanism.",
    }
)

_Calibration = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class Registered:
    """One mechanism name: class, parameters, reference simulator and calibration.

    ``parameters`` are the accounting spec's (required first, then optional), or the
    class's own for a mechanism with no spec; ``integers`` those that must be whole numbers;
    ``reference`` the parameters of the auditor's simulator (empty: not auditable by name);
    ``calibration(epsilon, delta, sensitivity, **options)`` the extra keys of
    ``infodp calibrate`` (None: not calibrated by name).
    """

    name: str
    path: str | None  # "module:Class", imported on first use (the table stays cheap to load)
    parameters: tuple[str, ...]
    integers: tuple[str, ...] = ()
    reference: tuple[str, ...] = ()
    calibration: _Calibration | None = None

    @property
    def mechanism(self) -> type[Mechanism] | None:
        """The class, or None for a name that is only a profile (pure-dp, approximate-dp)."""
        if self.path is None:
            return None
        module, _, attr = self.path.partition(":")
        cls: type[Mechanism] = getattr(importlib.import_module(f"infodp.mechanisms.{module}"), attr)
        return cls

    @property
    def has_spec(self) -> bool:
        """Whether the accounting spec knows this name (it has a profile builder)."""
        return self.name in SPECS

    @property
    def required(self) -> tuple[str, ...]:
        """Parameters a spec must give (none for a name without a spec)."""
        return SPECS[self.name][1] if self.has_spec else ()


# ---- calibrations (the extra keys of ``infodp calibrate``) ---------------------------------


def _gaussian(eps: float, dlt: float, sens: float, **_: Any) -> dict[str, Any]:
    from infodp.mechanisms.gaussian import (
        GaussianMechanism,
        analytic_gaussian_sigma,
        classic_gaussian_sigma,
    )

    out: dict[str, Any] = {
        "sigma": analytic_gaussian_sigma(eps, dlt, sens),
        "sigma_classic": classic_gaussian_sigma(eps, dlt, sens) if eps <= 1 else None,
    }
    if eps > 1:
        out["note"] = "classic calibration holds only for epsilon <= 1 (Dwork & Roth A.1)"
    g = GaussianMechanism.calibrate(eps, dlt, sens)
    out["release"] = {
        "sigma": g.sigma,
        "grid": g.grid,
        "integer_sensitivity": g.integer_sensitivity,
        "delta_at_epsilon": g.profile().delta(eps),
    }
    return out


def _laplace(eps: float, dlt: float, sens: float, **_: Any) -> dict[str, Any]:
    from infodp.mechanisms.base import round_up
    from infodp.mechanisms.laplace import LaplaceMechanism

    lap = LaplaceMechanism.calibrate(eps, dlt, sens)
    return {
        # textbook Laplace scale Δ/ε (Dwork et al. 2006), rounded up so that Δ/scale ≤ ε
        "scale": round_up(lambda b: sens / b <= eps, sens / eps, "scale"),
        "release": {
            "scale": lap.scale,
            "grid": lap.grid,
            "integer_sensitivity": lap.integer_sensitivity,
            "epsilon": lap.profile().pure_epsilon(),
        },
    }


def _discrete_gaussian(eps: float, dlt: float, sens: float, **_: Any) -> dict[str, Any]:
    from infodp.mechanisms.gaussian import DiscreteGaussianMechanism

    dg = DiscreteGaussianMechanism.calibrate(eps, dlt, as_positive_int("sensitivity", sens))
    return {
        "sigma": dg.sigma,
        "release": {"sigma": dg.sigma, "delta_at_epsilon": dg.profile().delta(eps)},
    }


def _discrete_laplace(eps: float, dlt: float, sens: float, **_: Any) -> dict[str, Any]:
    from infodp.mechanisms.laplace import DiscreteLaplaceMechanism

    dl = DiscreteLaplaceMechanism.calibrate(eps, dlt, as_positive_int("sensitivity", sens))
    return {
        "scale": dl.scale,
        "release": {"scale": dl.scale, "epsilon": dl.profile().pure_epsilon()},
    }


def _staircase(eps: float, dlt: float, sens: float, **_: Any) -> dict[str, Any]:
    from infodp.mechanisms.staircase import StaircaseMechanism

    st = StaircaseMechanism.calibrate(eps, dlt, sens)
    release = {"grid": st.grid, "period": st.period, "step": st.step}
    return {"gamma": st.gamma, "release": {**release, "epsilon": st.profile().pure_epsilon()}}


def _randomized_response(
    eps: float, dlt: float, sens: float, *, k: int = 2, **_: Any
) -> dict[str, Any]:
    from infodp.mechanisms.randomized_response import RandomizedResponse

    rr = RandomizedResponse.calibrate(eps, dlt, sens, k=as_positive_int("k", k, minimum=2))
    return {
        "k": rr.k,
        "keep_probability": rr.keep_probability,
        "release": {"epsilon": rr.profile().pure_epsilon()},
    }


def _exponential(eps: float, dlt: float, sens: float, **_: Any) -> dict[str, Any]:
    from infodp.mechanisms.exponential import ExponentialMechanism

    em = ExponentialMechanism.calibrate(eps, dlt, sens)
    return {"factor": eps / (2 * sens), "release": {"epsilon": em.profile().pure_epsilon()}}


def _subsampled_gaussian(
    eps: float, dlt: float, sens: float, *, sampling_rate: float = 0.01, steps: int = 1, **_: Any
) -> dict[str, Any]:
    from infodp.mechanisms.subsampled import SubsampledGaussian

    n = as_positive_int("steps", steps)
    sg = SubsampledGaussian.calibrate(eps, dlt, sens, sampling_rate, n)
    return {
        "sampling_rate": sg.sampling_rate,
        "steps": n,
        "noise_multiplier": sg.noise_multiplier,
        "sigma": sg.sigma,
        "release": {"epsilon_at_delta": sg.profile().repeat(n).epsilon(dlt)},
    }


# ---- the table ---------------------------------------------------------------------------


def _spec(name: str) -> tuple[str, ...]:
    _, required, optional = SPECS[name]
    return (*required, *optional)


def _rows() -> dict[str, Registered]:
    rows = [
        Registered(
            "laplace",
            "laplace:LaplaceMechanism",
            _spec("laplace"),
            reference=("scale", "sensitivity"),
            calibration=_laplace,
        ),
        Registered(
            "gaussian",
            "gaussian:GaussianMechanism",
            _spec("gaussian"),
            reference=("sigma", "sensitivity"),
            calibration=_gaussian,
        ),
        Registered(
            "discrete-laplace",
            "laplace:DiscreteLaplaceMechanism",
            _spec("discrete-laplace"),
            ("sensitivity",),
            ("scale", "sensitivity"),
            _discrete_laplace,
        ),
        Registered(
            "discrete-gaussian",
            "gaussian:DiscreteGaussianMechanism",
            _spec("discrete-gaussian"),
            ("sensitivity",),
            ("sigma", "sensitivity"),
            _discrete_gaussian,
        ),
        Registered(
            "randomized-response",
            "randomized_response:RandomizedResponse",
            _spec("randomized-response"),
            ("k",),
            ("epsilon",),
            _randomized_response,
        ),
        Registered("pure-dp", None, _spec("pure-dp")),
        Registered(
            "subsampled-gaussian",
            "subsampled:SubsampledGaussian",
            _spec("subsampled-gaussian"),
            calibration=_subsampled_gaussian,
        ),
        Registered(
            "discrete-subsampled-gaussian",
            None,
            _spec("discrete-subsampled-gaussian"),
            ("mu_units",),
        ),
        Registered("approximate-dp", None, _spec("approximate-dp")),
        Registered(
            "staircase",
            "staircase:StaircaseMechanism",
            ("epsilon", "sensitivity"),
            reference=("epsilon", "sensitivity"),
            calibration=_staircase,
        ),
        Registered(
            "exponential",
            "exponential:ExponentialMechanism",
            ("epsilon", "utility_sensitivity"),
            calibration=_exponential,
        ),
    ]
    return {row.name: row for row in rows}


REGISTRY: Mapping[str, Registered] = MappingProxyType(_rows())
"""Every mechanism name infodp knows, in the order of the accounting spec's table."""


def mechanism_class(name: str) -> type[Mechanism]:
    """The class registered under ``name``.

    >>> mechanism_class("staircase").__name__
    'StaircaseMechanism'
    """
    row = REGISTRY.get(name)
    if row is None or row.mechanism is None:
        names = [n for n, r in REGISTRY.items() if r.mechanism is not None]
        raise ParameterError("mechanism", name, f"one of {', '.join(names)}")
    return row.mechanism


def calibrated() -> tuple[str, ...]:
    """The names ``calibrate`` knows, in registry order."""
    return tuple(n for n, r in REGISTRY.items() if r.calibration is not None)


def referenced() -> dict[str, tuple[str, ...]]:
    """The auditor's reference simulators: name → the parameters each takes."""
    return {n: r.reference for n, r in REGISTRY.items() if r.reference}


def calibrate(
    name: str, epsilon: float, delta: float = 0.0, sensitivity: float = 1.0, **options: Any
) -> dict[str, Any]:
    """The noise ``name`` needs for a target (ε, δ), never above it: ``infodp calibrate``.

    ``options`` are ``k`` (randomized response), ``sampling_rate`` and ``steps`` (subsampled
    Gaussian). The answer echoes the target and adds the mechanism's noise parameters and
    ``release``: the parameters and certified guarantee of infodp's secure release.

    >>> c = calibrate("gaussian", 1.0, 1e-5)
    >>> c["release"]["delta_at_epsilon"] <= 1e-5
    True
    """
    row = REGISTRY.get(name)
    if row is None or row.calibration is None:
        raise ParameterError("mechanism", name, f"one of {', '.join(calibrated())}")
    eps = as_positive("epsilon", epsilon)
    dlt = as_nonnegative("delta", delta)
    sens = as_positive("sensitivity", sensitivity)
    if name in ("gaussian", "discrete-gaussian", "subsampled-gaussian") and not 0 < dlt < 1:
        raise ParameterError("delta", delta, "in (0, 1) for a Gaussian mechanism")
    out: dict[str, Any] = {"mechanism": name, "epsilon": eps, "delta": dlt, "sensitivity": sens}
    return {**out, **row.calibration(eps, dlt, sens, **options)}
