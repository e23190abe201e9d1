"""A read deadline moves with its body from task to task (the route reads the upstream's head,
the relay its body) under one timer: the read of whichever task reads when it is due times
out, and only that one."""

from __future__ import annotations

import asyncio

import pytest

from reference_proxy.read_deadline import ReadDeadline


async def read_once(deadline: ReadDeadline, value: bytes) -> bytes:
    ready: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    ready.set_result(value)
    return await deadline.read(ready)


async def test_a_read_in_a_second_task_times_out_under_the_first_tasks_timer() -> None:
    deadline = ReadDeadline(0.2)
    assert await asyncio.ensure_future(read_once(deadline, b"head")) == b"head"
    never: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    reading = asyncio.ensure_future(deadline.read(never))
    with pytest.raises(TimeoutError):
        await reading
    deadline.close()


async def test_the_first_task_is_not_cancelled_after_the_body_moved() -> None:
    """The first task keeps running after its read; the timer, when due, finds the second
    task reading and cancels only that one."""
    deadline = ReadDeadline(0.2)
    assert await read_once(deadline, b"head") == b"head"  # this task's read, then it goes on
    never: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    reading = asyncio.ensure_future(deadline.read(never))
    with pytest.raises(TimeoutError):
        await reading
    await asyncio.sleep(0)  # still running: not cancelled
    deadline.close()


async def test_reads_that_each_return_at_once_in_two_tasks_never_time_out() -> None:
    deadline = ReadDeadline(0.2)
    for _ in range(4):
        assert await read_once(deadline, b"a") == b"a"
        assert await asyncio.ensure_future(read_once(deadline, b"b")) == b"b"
        await asyncio.sleep(0.1)
    deadline.close()
