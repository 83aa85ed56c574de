"""A refused command, as the tests expect it: exit 2, nothing on stdout, one ``error:`` line
(what, where, how to fix) on stderr naming the given words."""

from __future__ import annotations

import re

ERROR_LINE = re.compile(r"^error: .+ \(.+\): .+$")


def refused(result: tuple[int, str, str], *words: str) -> None:
    code, out, err = result
    assert code == 2 and out == "", err
    assert len(err.strip().splitlines()) == 1 and ERROR_LINE.match(err.strip()), err
    for word in words:
        assert word in err, err
