"""A JSON format for profiles, shared by the CLI (``infodp account --spec``) and the accountant.

A spec is a JSON object; the format is:

- one mechanism: ``{"mechanism": NAME, <parameters>, "count": k, "group": g}`` where
  ``count`` (alias ``compositions`` or ``steps``, default 1) repeats the mechanism k times and
  ``group`` (default 1) asks for group privacy of g individuals. NAME and its parameters:

  ====================== =============================================================
  ``laplace``            ``scale``, ``sensitivity`` (default 1)
  ``gaussian``           ``sigma``, ``sensitivity`` (default 1)
  ``discrete-laplace``   ``scale``, ``sensitivity`` (integer, default 1)
  ``discrete-gaussian``  ``sigma``, ``sensitivity`` (integer, default 1)
  ``randomized-response`` ``epsilon``, ``k`` (default 2)
  ``pure-dp``            ``epsilon``
  ``subsampled-gaussian`` ``noise_multiplier``, ``sampling_rate``
  ``discrete-subsampled-gaussian`` ``sigma_units``, ``mu_units``, ``sampling_rate``
  ``approximate-dp``     ``epsilon``, ``delta``
  ====================== =============================================================

- a sequence: ``{"compose": [spec, ...], "count": k}`` (sequential composition);
- disjoint data: ``{"parallel": [spec, ...]}`` (parallel composition: the worst part);
- a bare list ``[spec, ...]`` is the same as ``{"compose": [...]}``.

Unknown keys are errors (a typo must not silently change a privacy claim).

>>> p = profile_from_spec({"compose": [
...     {"mechanism": "gaussian", "sigma": 2.0, "count": 4},
...     {"mechanism": "laplace", "scale": 1.0}]})
>>> round(p.rdp(2.0), 6) == round(4 * 0.25 + profile_from_spec(
...     {"mechanism": "laplace", "scale": 1}).rdp(2.0), 6)
True
>>> profile_to_spec(profile_from_spec({"mechanism": "pure-dp", "epsilon": 0.5}))
{'mechanism': 'pure-dp', 'epsilon': 0.5}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from infodp._validate import as_positive_int
from infodp.accounting import profile as _p
from infodp.errors import ParameterError

__all__ = ["MECHANISMS", "profile_from_spec", "profile_to_spec"]

_Builder = Callable[..., _p.PrivacyProfile]

MECHANISMS: dict[str, tuple[_Builder, tuple[str, ...], tuple[str, ...]]] = {
    # name: (constructor, required parameters, optional parameters)
    "laplace": (_p.laplace_profile, ("scale",), ("sensitivity",)),
    "gaussian": (_p.gaussian_profile, ("sigma",), ("sensitivity",)),
    "discrete-laplace": (_p.discrete_laplace_profile, ("scale",), ("sensitivity",)),
    "discrete-gaussian": (_p.discrete_gaussian_profile, ("sigma",), ("sensitivity",)),
    "randomized-response": (_p.randomized_response_profile, ("epsilon",), ("k",)),
    "pure-dp": (_p.pure_dp_profile, ("epsilon",), ()),
    "subsampled-gaussian": (
        _p.subsampled_gaussian_profile,
        ("noise_multiplier", "sampling_rate"),
        (),
    ),
    "discrete-subsampled-gaussian": (
        _p.discrete_subsampled_gaussian_profile,
        ("sigma_units", "mu_units", "sampling_rate"),
        (),
    ),
    "approximate-dp": (_p.approximate_dp_profile, ("epsilon", "delta"), ()),
}
"""Mechanism names accepted in specs, with their required and optional parameters."""

_COUNT_KEYS = ("count", "compositions", "steps")


def _count(obj: dict[str, Any], where: str) -> int:
    present = [k for k in _COUNT_KEYS if k in obj]
    if len(present) > 1:
        raise ParameterError(f"{where}: give only one of {', '.join(_COUNT_KEYS)}; got {present}.")
    return as_positive_int(f"{where}.{present[0]}", obj[present[0]]) if present else 1


def profile_from_spec(spec: Any, *, where: str = "spec") -> _p.PrivacyProfile:
    """Build a :class:`~infodp.accounting.profile.PrivacyProfile` from a spec (see module doc)."""
    if isinstance(spec, list):
        spec = {"compose": spec}
    if not isinstance(spec, dict):
        raise ParameterError(where, spec, "a JSON object or a list of them")
    count = _count(spec, where)
    group = as_positive_int(f"{where}.group", spec["group"]) if "group" in spec else 1
    common = {*_COUNT_KEYS, "group"}
    if "compose" in spec or "parallel" in spec:
        key = "compose" if "compose" in spec else "parallel"
        extra = set(spec) - common - {key}
        if extra:
            raise ParameterError(
                f"{where}", sorted(extra), f"no keys besides {key!r}, count, group"
            )
        items = spec[key]
        if not isinstance(items, list) or not items:
            raise ParameterError(f"{where}.{key}", items, "a non-empty list of specs")
        parts = [profile_from_spec(s, where=f"{where}.{key}[{i}]") for i, s in enumerate(items)]
        profile = _p.compose(*parts) if key == "compose" else _p.parallel(*parts)
    else:
        name = spec.get("mechanism")
        if name not in MECHANISMS:
            raise ParameterError(f"{where}.mechanism", name, f"one of {sorted(MECHANISMS)}")
        builder, required, optional = MECHANISMS[name]
        params = {k: v for k, v in spec.items() if k not in common and k != "mechanism"}
        missing = [k for k in required if k not in params]
        if missing:
            raise ParameterError(f"{where}", f"mechanism {name!r}", f"given {missing}")
        unknown = sorted(set(params) - set(required) - set(optional))
        if unknown:
            allowed = ", ".join((*required, *optional, *_COUNT_KEYS, "group"))
            raise ParameterError(f"{where}", unknown, f"only keys among: mechanism, {allowed}")
        profile = builder(**params)
    if group > 1:
        profile = profile.group(group)
    return profile.repeat(count) if count > 1 else profile


def profile_to_spec(profile: _p.PrivacyProfile) -> dict[str, Any]:
    """The spec of a profile built from the constructors (round-trips through JSON).

    Raises ParameterError for profiles with no spec (e.g. user subclasses).
    """
    p = profile
    if isinstance(p, _p.LaplaceProfile):
        return {"mechanism": "laplace", "scale": p.scale, "sensitivity": p.sensitivity}
    if isinstance(p, _p.GaussianProfile):
        return {"mechanism": "gaussian", "sigma": p.sigma, "sensitivity": p.sensitivity}
    if isinstance(p, _p.DiscreteLaplaceProfile):
        return {"mechanism": "discrete-laplace", "scale": p.scale, "sensitivity": p.sensitivity}
    if isinstance(p, _p.DiscreteGaussianProfile):
        return {"mechanism": "discrete-gaussian", "sigma": p.sigma, "sensitivity": p.sensitivity}
    if isinstance(p, _p.RandomizedResponseProfile):
        return {"mechanism": "randomized-response", "epsilon": p.eps, "k": p.k}
    if isinstance(p, _p.PureDPProfile):
        return {"mechanism": "pure-dp", "epsilon": p.eps}
    if isinstance(p, _p.SubsampledGaussianProfile):
        return {
            "mechanism": "subsampled-gaussian",
            "noise_multiplier": p.noise_multiplier,
            "sampling_rate": p.sampling_rate,
        }
    if isinstance(p, _p.DiscreteSubsampledGaussianProfile):
        return {
            "mechanism": "discrete-subsampled-gaussian",
            "sigma_units": p.sigma_units,
            "mu_units": p.mu_units,
            "sampling_rate": p.sampling_rate,
        }
    if isinstance(p, _p.ApproximateDPProfile):
        return {"mechanism": "approximate-dp", "epsilon": p.eps, "delta": p.delta_}
    if isinstance(p, _p.ComposedProfile):
        items = []
        for part, k in p.parts:
            item = profile_to_spec(part)
            if k > 1:
                item = {"compose": [item], "count": k}
            items.append(item)
        return {"compose": items}
    if isinstance(p, _p.ParallelProfile):
        return {"parallel": [profile_to_spec(q) for q in p.parts]}
    if isinstance(p, _p.GroupProfile):
        inner = profile_to_spec(p.base)
        return {"compose": [inner], "group": p.k}
    raise ParameterError("profile", type(p).__name__, "a profile built by infodp's constructors")
