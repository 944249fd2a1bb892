import sys, time, statistics
from bench.stack import stack, insert_posts, due_slots
from core.runtime import job
from core.ledger import claim_due_post, part_published
from core.runtime.lease import claim_token
from core.plugins import manager
from core.plugins.adapter import PublishContext
from core.plugins.transport import http_client
from core.runtime.calls import call_adapter
from core.store import db

backend = sys.argv[1]
with stack(backend, "parts") as running:
    (cid,) = running.channels(1)
    with db.holding():
        for rnd in range(3):
            ids = insert_posts([cid], due_slots(300))
            tc = tcall = tr = 0.0
            for pid in ids:
                t0 = time.perf_counter()
                c = claim_due_post(pid, claim_token(), job.clock().now(), 30, 30)
                t1 = time.perf_counter()
                plan = c.plans[0]
                part = plan.parts[0]
                ad = manager.adapter(plan.platform)
                ctx = PublishContext(settings=plan.settings, client=http_client(10.0), key=part.key, text=part.text)
                res = call_adapter(ad.publish, ctx, 10.0)
                t2 = time.perf_counter()
                part_published(c, plan.delivery_id, 0, res, job.clock().now(), 30)
                t3 = time.perf_counter()
                tc += t1 - t0
                tcall += t2 - t1
                tr += t3 - t2
            n = len(ids)
            print(
                f"{backend}: claim {tc / n * 1000:.3f} ms  call {tcall / n * 1000:.3f} ms  result {tr / n * 1000:.3f} ms"
            )
        from sqlalchemy import text

        with db.peeking() as conn:
            print(
                conn.execute(
                    text("select count(*), string_agg(left(statement, 40), ' | ') from pg_prepared_statements")
                ).one()
            )
            print(conn.connection.dbapi_connection.prepare_threshold)
