"""main(): how every test runs (exit 0 pass, 1 fail, 77 skip), with the labs cleaned up and
sanitizer reports turned into a failure."""

from __future__ import annotations

import subprocess
import sys
import time
import traceback
from typing import Callable, Iterable

from .base import SKIP, Skip, require
from .checks import SANITIZER_REPORTS
from .netns import _LABS


def main(test: Callable[[], None], binaries: Iterable[str] = (), vipd: bool = False,
         root: bool = True) -> None:
    """Runs test() and exits 0 (pass), 1 (fail) or 77 (skip: only outside CI)."""
    t0 = time.monotonic()
    try:
        require(binaries, vipd=vipd, root=root)
        test()
        for lab_ in list(_LABS):
            lab_.cleanup()
        if SANITIZER_REPORTS:
            for r in SANITIZER_REPORTS:
                print(f"----- sanitizer report -----\n{r}", flush=True)
            raise AssertionError(f"{len(SANITIZER_REPORTS)} process(es) reported a sanitizer "
                                 f"error (see above)")
    except Skip as e:
        print(f"SKIP: {e}", flush=True)
        sys.exit(SKIP)
    except (AssertionError, TimeoutError, RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        traceback.print_exc()
        print(f"FAIL: {e}", flush=True)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        print(f"FAIL (unexpected {type(e).__name__}): {e}", flush=True)
        sys.exit(1)
    print(f"PASS ({time.monotonic() - t0:.1f}s)", flush=True)
    sys.exit(0)
