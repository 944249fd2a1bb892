"""The rq worker that runs post jobs, and re-arms a post after its job ends.

A running job is never cut short by arming (§7), and rq deletes a finished job's hash
right after it returns – so a job cannot re-arm its own id. The worker does it instead,
from the row, once rq has finished with the job – except after a job whose outcome says
it left the post ``published``: no action leads out of that state, so there is nothing
to arm. A recurring schedule's release timer is re-armed the same way, for its next slot.
"""

from __future__ import annotations

import logging
from typing import Any

from rq import Queue, SimpleWorker
from rq.job import Job

from core.plugins import manager as plugins
from core.runtime.arming import PUBLISH_FUNC, RELEASE_FUNC, arm, arm_release
from core.runtime.job import JobOutcome
from core.runtime.queue import connection, post_queue
from core.store import db

log = logging.getLogger(__name__)


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
    """An in-process worker: rq's fork per job costs 15–50 ms, and herald's lease and
    fence make running jobs in the worker's own process safe."""

    job_class = PostJob

    def work(self, *args: Any, **kwargs: Any) -> bool:
        # One connection for every job's reads and writes and re-arms, while jobs follow
        # each other within a second (``core.store.db.holding``): checking one out of the
        # pool per job costs a ping and a reset.
        with db.holding():
            return bool(super().work(*args, **kwargs))

    def perform_job(self, job: Job, queue: Queue) -> bool:
        if job.func_name == RELEASE_FUNC:
            return self._release(job, queue)
        if job.func_name != PUBLISH_FUNC:
            return bool(super().perform_job(job, queue))
        ok: bool = super().perform_job(job, queue)  # on work()'s held connection, as is the re-arm
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
