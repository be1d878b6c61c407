"""Drop-in accounting for training libraries: dp_accounting events and Opacus accountants.

- :class:`DpEventAccountant` — dp_accounting's ``PrivacyAccountant`` interface over event
  trees (:func:`profile_from_event`, :func:`event_from_profile`);
- :class:`OpacusAccountant` — Opacus' accountant interface (``step``, ``get_epsilon``,
  ``history``, ``state_dict``), and :func:`get_noise_multiplier`.

Neither library is imported unless it is used; ``pip install 'infodp[ml]'`` installs
dp_accounting.
"""

from __future__ import annotations

import typing as _typing

from infodp._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from infodp.accounting.interop._dp_event import (
        DpEventAccountant,
        UnsupportedEvent,
        event_from_profile,
        profile_from_event,
    )
    from infodp.accounting.interop._opacus import (
        OpacusAccountant,
        get_noise_multiplier,
        register_opacus,
    )

__getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        "DpEventAccountant": "infodp.accounting.interop._dp_event",
        "UnsupportedEvent": "infodp.accounting.interop._dp_event",
        "event_from_profile": "infodp.accounting.interop._dp_event",
        "profile_from_event": "infodp.accounting.interop._dp_event",
        "OpacusAccountant": "infodp.accounting.interop._opacus",
        "get_noise_multiplier": "infodp.accounting.interop._opacus",
        "register_opacus": "infodp.accounting.interop._opacus",
    },
)

__all__ = [
    "DpEventAccountant",
    "OpacusAccountant",
    "UnsupportedEvent",
    "event_from_profile",
    "get_noise_multiplier",
    "profile_from_event",
    "register_opacus",
]
