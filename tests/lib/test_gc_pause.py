"""The console script's collector pause: only its own pause is resumed."""

from __future__ import annotations

import gc

from split_assets.lib import gc_pause


def test_only_its_own_pause_is_resumed() -> None:
    assert gc.isenabled()
    try:
        gc_pause.pause()
        assert not gc.isenabled()
        gc_pause.resume()
        assert gc.isenabled()
        gc.disable()  # a caller's own choice is left alone
        gc_pause.resume()
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()
