"""The threads a worker runs handlers in: a pool of threads for every
handler, and an asyncio event loop in a thread of its own for the
coroutines handlers return."""

import asyncio
import collections
import threading
from typing import Any, Callable, Optional, Set


class _Pool:
    """``size`` daemon threads running tasks from a queue (daemon threads, so
    a handler stuck forever does not keep the process alive at exit), and
    one more for each handler :meth:`replace` was told of, while it runs."""

    def __init__(self, size: int, run: Callable[[Any], None]) -> None:
        self._queue: "collections.deque[Optional[Any]]" = collections.deque()
        self._ready = threading.Condition()
        self._run = run
        self._threads = 0                   # Threads started and not ended
        self._replaced: Set[int] = set()    # id() of tasks whose thread is replaced
        for _ in range(size):
            self._start()

    def _start(self) -> None:
        with self._ready:
            self._threads += 1
            name = "actd-handler-%d" % self._threads
        threading.Thread(target=self._loop, name=name, daemon=True).start()

    def submit(self, task: Any) -> None:
        with self._ready:
            self._queue.append(task)
            self._ready.notify()

    def replace(self, task: Any) -> None:
        """Start a thread in the place of the one running task, whose
        connection was lost: the broker told capacity again in the next
        READY sends that many tasks, while the handler may run on for
        long. The thread that ran it ends when it returns."""
        with self._ready:
            self._replaced.add(id(task))
        self._start()

    def shutdown(self) -> None:
        """Threads stop after their current task; queued tasks are dropped."""
        with self._ready:
            self._queue.clear()
            self._queue.extend([None] * self._threads)
            self._ready.notify_all()

    def _loop(self) -> None:
        while True:
            with self._ready:
                while not self._queue:
                    self._ready.wait()
                task = self._queue.popleft()
            if task is None:
                return
            self._run(task)
            with self._ready:
                if id(task) in self._replaced:
                    self._replaced.discard(id(task))
                    self._threads -= 1
                    return


class _Loop:
    """An asyncio event loop running in a daemon thread of its own, for the
    coroutines handlers return."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._main, name="actd-asyncio", daemon=True)
        self.thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            # Coroutines still running past the grace are cancelled, so that
            # none is destroyed while pending
            tasks = asyncio.all_tasks(self.loop)
            for task in tasks:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def run(self, awaitable: Any) -> Any:
        """Run awaitable on the loop; block until it ends; its result."""
        async def wrapped() -> Any:
            return await awaitable
        return asyncio.run_coroutine_threadsafe(wrapped(), self.loop).result()

    def close(self, timeout: float) -> None:
        """Stop the loop; wait up to timeout seconds for its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)
