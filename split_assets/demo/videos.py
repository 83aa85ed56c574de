"""Layout of the videos (durations, domains, sub-categories, task types) and their caption trees
(root, segments, leaves)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from split_assets.demo.domains import DOMAIN_VOCAB
from split_assets.demo.figures import (
    DISTINCT_TYPES_PER_VIDEO,
    DOMAIN_QUESTION_COUNTS,
    DURATION_RANGES_S,
    DURATIONS,
    QUESTIONS_PER_VIDEO,
    SUB_CATEGORIES,
    TASK_TYPE_COUNTS,
    TASK_TYPES,
)
from split_assets.demo.model import Node, Video
from split_assets.demo.sampling import apportion, pick, sample, weighted_index
from split_assets.demo.vocabulary import (
    COLORS,
    COUNTABLES,
    NUMBER_WORDS,
    SIGN_TEXTS,
    SURFACES,
    VERBS,
    YOUTUBE_ALPHABET,
    article,
    cap,
    synopsis,
)

# --------------------------------------------------------------------------------------------
# Videos: durations, domains, task types
# --------------------------------------------------------------------------------------------


def _scaled_task_counts(n_videos: int) -> list[int]:
    counts = apportion(list(TASK_TYPE_COUNTS.values()), n_videos * QUESTIONS_PER_VIDEO)
    if n_videos >= 12:
        for i in range(len(counts)):
            if counts[i] == 0:
                donor = max(range(len(counts)), key=lambda j: (counts[j], -j))
                counts[donor] -= 1
                counts[i] += 1
    return counts


def _assign_task_types(rng: np.random.Generator, n_videos: int) -> list[list[str]]:
    """Per video, three task types, matching the distinct-types-per-video distribution."""
    counts = _scaled_task_counts(n_videos)
    n1, n2, n3 = apportion(list(DISTINCT_TYPES_PER_VIDEO.values()), n_videos)
    for _attempt in range(200):
        result = _try_assign_types(rng, counts, n1, n2, n3)
        if result is not None:
            break
    else:  # pragma: no cover - only for degenerate tiny sizes
        tokens = [t for t, c in enumerate(counts) for _ in range(c)]
        result = [[tokens[i + k * n_videos] for k in range(3)] for i in range(n_videos)]
    order = rng.permutation(n_videos)
    out: list[list[str]] = []
    for i in order:
        types = [TASK_TYPES[t] for t in result[int(i)]]
        out.append([types[int(j)] for j in rng.permutation(3)])
    return out


def _draw_type(rng: np.random.Generator, remaining: list[int], eligible: Callable[[int], bool],
               take: int) -> int | None:
    """A task type drawn by its remaining count among the eligible ones (None when there is
    none), its count lowered by ``take``."""
    weights = [c if eligible(c) else 0 for c in remaining]
    if sum(weights) == 0:
        return None
    t = weighted_index(rng, weights)
    remaining[t] -= take
    return t


def _try_assign_types(
    rng: np.random.Generator, counts: list[int], n1: int, n2: int, n3: int
) -> list[list[int]] | None:
    remaining = list(counts)
    videos: list[list[int]] = []
    for _ in range(n1):
        t = _draw_type(rng, remaining, lambda c: c >= 3, 3)
        if t is None:
            return None
        videos.append([t, t, t])
    for _ in range(n2):
        t = _draw_type(rng, remaining, lambda c: c >= 2, 2)
        if t is None:
            return None
        u = _draw_type(rng, [c if j != t else 0 for j, c in enumerate(remaining)],
                       lambda c: True, 0)
        if u is None:
            return None
        remaining[u] -= 1
        videos.append([t, t, u])
    if max(remaining, default=0) > n3:
        return None
    # Three distinct types per video: always feasible while max(remaining) <= videos left.
    for k in range(n3, 0, -1):
        chosen = [i for i, c in enumerate(remaining) if c == k]
        while len(chosen) < 3:
            weights = [0 if i in chosen else c for i, c in enumerate(remaining)]
            if sum(weights) == 0:
                return None
            chosen.append(weighted_index(rng, weights))
        for i in chosen:
            remaining[i] -= 1
        videos.append(chosen)
    return videos


def layout_videos(rng: np.random.Generator, n_videos: int) -> list[Video]:
    """The videos in id order, with duration, domain, sub-category and task types (no trees
    yet)."""
    width = max(3, len(str(n_videos)))
    base, extra = divmod(n_videos, len(DURATIONS))
    per_duration = [base + (1 if i < extra else 0) for i in range(len(DURATIONS))]
    domain_names = list(DOMAIN_QUESTION_COUNTS)
    domain_total = apportion(list(DOMAIN_QUESTION_COUNTS.values()), n_videos)
    task_types = _assign_task_types(rng, n_videos)

    # As in the official file, ids run through the short, then medium, then long videos, and
    # inside a duration block the videos are grouped by domain and sub-category.
    videos: list[Video] = []
    left = list(domain_total)
    for d_index, duration in enumerate(DURATIONS):
        size = per_duration[d_index]
        if d_index == len(DURATIONS) - 1:
            block = list(left)
        else:
            block = apportion(left, size) if sum(left) else [0] * len(left)
        left = [a - b for a, b in zip(left, block, strict=True)]
        for dom_i, domain in enumerate(domain_names):
            subs = SUB_CATEGORIES[domain]
            offset = int(rng.integers(len(subs)))
            sub_counts = [0] * len(subs)
            for k in range(block[dom_i]):
                sub_counts[(offset + k) % len(subs)] += 1
            for sub, n_sub in zip(subs, sub_counts, strict=True):
                for _ in range(n_sub):
                    idx = len(videos)
                    chars = rng.integers(len(YOUTUBE_ALPHABET), size=11).tolist()
                    yt = "".join(YOUTUBE_ALPHABET[c] for c in chars)
                    videos.append(
                        Video(
                            index=idx,
                            video_id=str(idx + 1).zfill(width),
                            duration=duration,
                            domain=domain,
                            sub_category=sub,
                            youtube_id=yt,
                            task_types=task_types[idx],
                        )
                    )
    return videos


# --------------------------------------------------------------------------------------------
# Caption trees
# --------------------------------------------------------------------------------------------


def build_tree(rng: np.random.Generator, video: Video) -> None:
    """Draw the caption tree of ``video`` (its duration, segments and leaves)."""
    vocab = DOMAIN_VOCAB[video.domain]
    lo, hi = DURATION_RANGES_S[video.duration]
    dur_t = int(rng.integers(lo * 10, hi * 10 + 1))
    n_seg = int(rng.integers(3, 7))
    leaves_per = [int(rng.integers(2, 6)) for _ in range(n_seg)]
    n_leaves = sum(leaves_per)
    weights = rng.uniform(0.6, 1.4, size=n_leaves)
    cum = np.cumsum(weights) / float(weights.sum()) * dur_t
    bounds = [0] + [int(round(float(x))) for x in cum[:-1]] + [dur_t]

    cast = sample(rng, vocab["subjects"], 3)
    nouns = sample(rng, vocab["nouns"], 6)
    places = list(vocab["places"])
    signs = sample(rng, SIGN_TEXTS, 6)
    # One row of independent uniform draws per leaf (modulo bias is negligible at 10**6).
    draws = rng.integers(0, 1_000_000, size=(n_leaves, 9)).tolist()

    segments: list[Node] = []
    leaves: list[Node] = []
    for s in range(n_seg):
        place = pick(rng, places)
        seg_leaves: list[Node] = []
        for k in range(leaves_per[s]):
            leaf_i = len(leaves) + k
            details = _LeafDetails(cast, nouns, signs, place, draws[leaf_i])
            seg_leaves.append(_leaf(f"n0.{s + 1}.{k + 1}", bounds[leaf_i],
                                    bounds[leaf_i + 1], details))
        segments.append(_segment(f"n0.{s + 1}", place, seg_leaves))
        leaves.extend(seg_leaves)

    topic = pick(rng, vocab["topics"])
    seg_places: list[str] = []
    for seg in segments:
        if seg.place not in seg_places:
            seg_places.append(seg.place)
    video.synopsis = synopsis(topic, cast, seg_places)
    root_caption = f"{video.synopsis} ({video.sub_category})."
    video.duration_t = dur_t
    video.root = Node(node_id="n0", start=0, end=dur_t, caption=root_caption, children=segments)
    video.segments = segments
    video.leaves = leaves


@dataclass(frozen=True)
class _LeafDetails:
    """What a leaf's scene is drawn from: the video's cast, nouns and signs, the segment's
    place, and the leaf's row of nine uniform draws."""

    cast: Sequence[str]
    nouns: Sequence[str]
    signs: Sequence[str]
    place: str
    row: Sequence[int]


def _leaf(node_id: str, start: int, end: int, d: _LeafDetails) -> Node:
    """A leaf and its caption (no draws: the leaf's row of draws was made in advance)."""
    r = d.row
    leaf = Node(
        node_id=node_id,
        start=start,
        end=end,
        caption="",
        subject=d.cast[r[0] % len(d.cast)],
        verb=VERBS[r[1] % len(VERBS)],
        color=COLORS[r[2] % len(COLORS)],
        noun=d.nouns[r[3] % len(d.nouns)],
        place=d.place,
        count_n=2 + r[4] % 8,
        countable=COUNTABLES[r[5] % len(COUNTABLES)],
        sign=d.signs[r[6] % len(d.signs)],
        surface=SURFACES[r[7] % len(SURFACES)],
    )
    obj = f"{article(leaf.color)} {leaf.color} {leaf.noun}"
    caption = f"{cap(leaf.subject)} {leaf.verb[1]} {obj} {d.place}."
    extra = r[8] / 1_000_000
    if extra < 0.35:
        caption += f" {cap(NUMBER_WORDS[leaf.count_n])} {leaf.countable} are visible."
    elif extra < 0.55:
        caption += f" Text is visible on {article(leaf.surface)} {leaf.surface}."
    leaf.caption = caption
    return leaf


def _segment(node_id: str, place: str, seg_leaves: list[Node]) -> Node:
    """A segment node over its leaves, captioned by its first and last leaf."""
    first, last = seg_leaves[0], seg_leaves[-1]
    seg_caption = (
        f"{cap(place)}, {first.subject} {first.verb[1]} the {first.color} {first.noun}; "
        f"later {last.subject} {last.verb[1]} the {last.color} {last.noun}."
    )
    return Node(
        node_id=node_id,
        start=first.start,
        end=last.end,
        caption=seg_caption,
        children=seg_leaves,
        place=place,
    )
