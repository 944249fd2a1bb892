"""The rq worker that runs post jobs, several at once, and re-arms a post after its job ends.

A running job is never cut short by arming (§7), and rq deletes a finished job's hash
right after it returns – so a job cannot re-arm its own id. The worker does it instead,
from the row, once rq has finished with the job – except after a job whose outcome says
it left the post ``published``: no action leads out of that state, so there is nothing
to arm. A recurring schedule's release timer is re-armed the same way, for its next slot.

**Jobs at once.** Most of a publish waits: on the database's answers and commits, and on
the platform. A worker runs up to ``HERALD_WORKER_JOBS`` jobs at once (by default 3 on
PostgreSQL and 1 on SQLite, ``core.config.WORKER_JOBS``), each on a thread of its own that
keeps one database connection while it works (``core.store.db.holding``), so one job's
waits overlap another's work. The worker takes a job off the queue only when a thread is
free to run it, so a job is never held back in one worker while another could run it.
rq's worker keeps one job's bookkeeping (its ``execution``) on itself; here each thread
keeps its own. rq's timeout of a job is a timer rather than a signal (signals reach only
the main thread). A stop (SIGTERM) lets the jobs in flight end before the worker leaves,
as rq lets its one job end; so does a burst run, which also runs whatever those jobs
queued. The lease and the fence make jobs side by side safe as they make workers side by
side safe: two jobs of one post never both hold its claim. With one job at a time the
worker runs it on its own thread, as rq's ``SimpleWorker`` does.

**Sockets after a fork.** rq's scheduler is a fork of its worker, and a fork shares the
worker's Redis sockets with the child, which outlives a worker killed alone (SIGKILL, the
OOM killer). A blocking wait for a job left on such a socket stays alive in Redis, which
then hands the next job to the dead worker: the job is gone until the reconciler re-arms
it. So after every fork the worker closes its idle Redis sockets (:func:`_after_fork`):
every later command, the wait for a job included, goes on a socket of its own.
"""

from __future__ import annotations

import logging
import os
import queue as queues
import threading
import weakref
from typing import Any

from redis import Redis
from rq import Queue, SimpleWorker
from rq.exceptions import StopRequested
from rq.executions import Execution
from rq.job import Job
from rq.timeouts import TimerDeathPenalty

from core import config
from core.plugins import manager as plugins
from core.runtime.arming import PUBLISH_FUNC, RELEASE_FUNC, arm, arm_release
from core.runtime.job import JobOutcome
from core.runtime.queue import connection, post_queue
from core.store import db

log = logging.getLogger(__name__)

#: The Redis clients of this process's workers, whose sockets a fork shares.
_clients: weakref.WeakSet[Redis] = weakref.WeakSet()


def _after_fork() -> None:
    """In the worker, after it forked (rq's scheduler): close the Redis sockets the child
    now shares that no thread is using, so none is ever used for a blocking pop again."""
    for client in list(_clients):
        client.connection_pool.disconnect(inuse_connections=False)


os.register_at_fork(after_in_parent=_after_fork)


class PostJob(Job):
    """An rq job that keeps what its function returned, for the worker that ran it.

    Post jobs keep no result in Redis (``result_ttl=0``); the worker reads the typed
    outcome from the job object it performed.
    """

    outcome: JobOutcome | None = None

    def perform(self) -> Any:
        result = super().perform()
        self.outcome = result if isinstance(result, JobOutcome) else None
        return result


class HeraldWorker(SimpleWorker):
    """An in-process worker (rq's fork per job costs 15–50 ms, and herald's lease and fence
    make running jobs in the worker's own process safe) that runs ``jobs`` jobs at once."""

    job_class = PostJob

    def __init__(self, *args: Any, jobs: int | None = None, **kwargs: Any) -> None:
        self._own = threading.local()
        super().__init__(*args, **kwargs)
        _clients.add(self.connection)
        self.jobs = jobs if jobs is not None else config.settings().jobs_at_once
        if self.jobs > 1:
            self.death_penalty_class = TimerDeathPenalty
        #: Threads free to take a job; the main loop takes one before it dequeues.
        self._free = threading.Semaphore(self.jobs)
        self._handed: queues.SimpleQueue[tuple[Job, Queue] | None] = queues.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = threading.Condition()
        self._in_flight = 0
        #: Whether the main thread waits for a free thread or for a job (a stop ends the wait).
        self._waiting = False

    # rq keeps the running job's execution on the worker; each job thread keeps its own.
    @property
    def execution(self) -> Execution | None:
        return getattr(self._own, "execution", None)

    @execution.setter
    def execution(self, value: Execution | None) -> None:
        self._own.execution = value

    def work(self, *args: Any, **kwargs: Any) -> bool:
        # One connection for every job's reads and writes and re-arms, while jobs follow
        # each other within a second (``core.store.db.holding``): checking one out of the
        # pool per job costs a ping and a reset. Job threads hold their own.
        with db.holding():
            return bool(super().work(*args, **kwargs))

    def dequeue_job_and_maintain_ttl(self, timeout: int | None, max_idle_time: int | None = None) -> Any:
        if self.jobs == 1:
            return super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
        self._waiting = True
        try:
            self._free.acquire()  # a thread is free: only then is a job taken off the queue
        except BaseException:
            self._waiting = False
            raise
        try:
            while True:
                taken = super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
                if taken is not None or timeout is not None or not self._wait_for_a_job_to_end():
                    break
                # A burst ends only once nothing is in flight: a job that ended may have
                # queued another (a re-arm for now), which the burst runs too.
        except BaseException:
            self._free.release()
            raise
        finally:
            self._waiting = False
        if taken is None:
            self._free.release()
        return taken

    def execute_job(self, job: Job, queue: Queue) -> None:
        if self.jobs == 1:
            super().execute_job(job, queue)
            return
        with self._idle:
            self._in_flight += 1
        if len(self._threads) < self.jobs:
            thread = threading.Thread(target=self._run_jobs, name=f"herald-job-{len(self._threads)}", daemon=True)
            self._threads.append(thread)
            thread.start()
        self._handed.put((job, queue))

    def _shutdown(self) -> None:
        """A stop (SIGTERM): rq's asks its busy worker to stop after its job, and stops an
        idle one at once. Here jobs run on their own threads, so the main loop stops taking
        jobs at once – a wait for a free thread or for a job ends – and ``teardown`` lets
        the jobs in flight end."""
        if self.jobs == 1:
            super()._shutdown()  # type: ignore[no-untyped-call]
            return
        self._stop_requested = True
        if self.scheduler:
            self.stop_scheduler()  # type: ignore[no-untyped-call]
        if self._waiting:
            raise StopRequested()

    def teardown(self) -> None:
        # Before rq records the worker's death: the jobs in flight end and are recorded
        # first, under this worker's name (a warm stop, as rq waits for its one job).
        self._stop_threads()
        super().teardown()  # type: ignore[no-untyped-call]

    def _run_jobs(self) -> None:
        """A job thread: runs the jobs handed to it, on one held connection, until stopped."""
        with db.holding():
            while (handed := self._handed.get()) is not None:
                job, queue = handed
                try:
                    self.prepare_execution(job)
                    self.perform_job(job, queue)
                except Exception:  # rq records a job's own failure; this is rq's bookkeeping failing
                    log.exception("job %s: the worker could not run it to its end", job.id)
                finally:
                    with self._idle:
                        self._in_flight -= 1
                        self._idle.notify_all()
                    self._free.release()

    def _wait_for_a_job_to_end(self) -> bool:
        """Wait until a job in flight ends; False when none was in flight."""
        with self._idle:
            if self._in_flight == 0:
                return False
            in_flight = self._in_flight
            self._idle.wait_for(lambda: self._in_flight < in_flight)
            return True

    def _stop_threads(self) -> None:
        for _ in self._threads:
            self._handed.put(None)
        for thread in self._threads:
            thread.join()
        self._threads.clear()

    def perform_job(self, job: Job, queue: Queue) -> bool:
        if job.func_name == RELEASE_FUNC:
            return self._release(job, queue)
        if job.func_name != PUBLISH_FUNC:
            return bool(super().perform_job(job, queue))
        ok: bool = super().perform_job(job, queue)  # on the thread's held connection, as is the re-arm
        outcome = job.outcome if isinstance(job, PostJob) else None
        if outcome is not None and outcome.settled:
            return ok
        post_id = int(job.args[0])
        try:
            arm(post_id)
        except Exception:  # the reconciler re-arms from the row
            log.exception("post %s: re-arm after its job failed", post_id)
        return ok

    def _release(self, job: Job, queue: Queue) -> bool:
        """A schedule's release timer, then the timer for its next slot (rq deletes the
        finished job's hash after it returns, so the job cannot re-arm its own id)."""
        ok: bool = super().perform_job(job, queue)
        schedule_id = int(job.args[0])
        try:
            arm_release(schedule_id)
        except Exception:  # the reconciler releases due schedules from the rows
            log.exception("schedule %s: re-arm after its release failed", schedule_id)
        return ok


def run_worker(*, burst: bool = False, with_scheduler: bool = True, **kwargs: Any) -> bool:
    """Work the post queue until stopped (or until it is empty, with ``burst``).

    Raises:
        ConfigError: plugins.toml cannot work; refused before the first job, not in one.
    """
    plugins.load()
    worker = HeraldWorker([post_queue()], connection=connection())
    return bool(worker.work(burst=burst, with_scheduler=with_scheduler, **kwargs))
