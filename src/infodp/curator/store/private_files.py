"""Files only their owner may read: the store, its ledger and their side files are created
under umask 077 (one lock: the umask is per process, so threads take turns).

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "f")
>>> with private_files(), open(p, "w") as f:
...     _ = f.write("x")
>>> oct(os.stat(p).st_mode & 0o777)
'0o600'
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

__all__ = ["private_files"]

_UMASK_LOCK = threading.RLock()


@contextlib.contextmanager
def private_files() -> Iterator[None]:
    """While inside, files this process creates are readable by their owner only (umask 077)."""
    with _UMASK_LOCK:
        old = os.umask(0o077)
        try:
            yield
        finally:
            os.umask(old)
