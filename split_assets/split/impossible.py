"""Why a split cannot be made, as data: which floors, which categories, by how much. The split
core raises these and knows no config key or command; ``split_assets/app/messages.py`` (the shell's
one boundary) words each as the one-line error with the config key and the fix.

Each is a ``SplitImpossible``; ``str()`` of one is its data (``repr``)."""

from __future__ import annotations

from dataclasses import dataclass


class SplitImpossible(Exception):
    """A split that the counts, floors or epsilon rule out."""

    def __str__(self) -> str:
        return repr(self)


@dataclass(eq=False)
class NoTestPool(SplitImpossible):
    """``n_trainval`` takes every video: nothing is left for the test pool."""

    n_trainval: int
    n_videos: int


@dataclass(frozen=True)
class FloorGap:
    """One task type's floor against the most T2 it can reach (``known`` finished T2 and
    ``open`` answers not diagnosed yet, where that matters)."""

    task_type: str
    floor: int
    reachable: int
    known: int = 0
    open: int = 0


@dataclass(eq=False)
class FloorsAboveBenchmark(SplitImpossible):
    """Fewer non-degraded T2 in the whole benchmark than the floor (``reachable``)."""

    gaps: tuple[FloorGap, ...]


@dataclass(eq=False)
class FloorsAboveOpen(SplitImpossible):
    """Even if every answer not yet diagnosed were T2 (before any judge call)."""

    gaps: tuple[FloorGap, ...]


@dataclass(eq=False)
class FloorsNeedVideos(SplitImpossible):
    """A floor needs more videos than ``n_trainval`` (``reachable``: the videos needed)."""

    n_trainval: int
    gaps: tuple[FloorGap, ...]


@dataclass(eq=False)
class FloorsNotTogether(SplitImpossible):
    """No ``n_trainval`` videos meet every floor at once (``reachable``: the most T2 of one
    type alone)."""

    n_trainval: int
    gaps: tuple[FloorGap, ...]


@dataclass(frozen=True)
class BoundReach:
    """One epsilon bound against the smallest |deviation| its category reaches under the
    floors on its own; ``alone``: reachable alone, not together with the other bounds."""

    label: str
    epsilon: float
    best: float
    alone: bool


@dataclass(eq=False)
class EpsilonUnderFloors(SplitImpossible):
    """Epsilon cannot hold together with the floors (an exact MILP proved it)."""

    reach: tuple[BoundReach, ...]
    alone_ok: int  # bounds reachable alone


@dataclass(eq=False)
class EpsilonMissed(SplitImpossible):
    """The best split found still deviates beyond epsilon (``stats.over_epsilon``'s lines)."""

    over: tuple[str, ...]


@dataclass(eq=False)
class ValidationWrongShort(SplitImpossible):
    """No validation draw of ``n_validation`` videos holds ``val_wrong_min`` wrong answers
    (``most`` at best); ``held``: what the drawn validation pool holds, once there is one."""

    val_wrong_min: int
    n_validation: int
    most: int
    held: int | None = None
