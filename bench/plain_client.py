"""The bare ``openai.AsyncOpenAI`` sending a workspace's rendered judge prompts with a fixed
number in flight, nothing else: the reference the judge's benches measure against, in the
same run (what the machine and the server allow)."""

from __future__ import annotations

import asyncio
import time
from typing import Any


def rendered_prompts(ws: Any, wrong: list[Any]) -> list[list[dict[str, str]]]:
    """The judge's prompts for these wrong answers (``ws``: a Session)."""
    from split_assets.diagnosis.cases import CaseSource
    from split_assets.judge.prompts import load_templates
    from split_assets.judge.render import render_messages

    templates = load_templates(ws.loaded.paths.prompts_dir, ws.judge.required_templates())
    return [render_messages(templates, c, ws.loaded.config.diag.context)
            for c in CaseSource(ws.inputs, wrong).cases(wrong)]


def plain_wall_s(prompts: list[list[dict[str, str]]], in_flight: int,
                 model: str = "bench-model") -> float:
    """Seconds the plain client takes to send every prompt, ``in_flight`` at a time."""
    import openai

    async def run() -> float:
        client = openai.AsyncOpenAI(max_retries=0, timeout=600)
        places = asyncio.Semaphore(in_flight)

        async def one(messages: list[dict[str, str]]) -> None:
            async with places:
                await client.chat.completions.create(model=model, messages=messages,
                                                     temperature=0.0)

        started = time.perf_counter()
        await asyncio.gather(*(one(m) for m in prompts))
        wall = time.perf_counter() - started
        await client.close()
        return wall

    return asyncio.run(run())
