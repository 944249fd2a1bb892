"""herald's HTTP API (§15): FastAPI over ``core.services``, so the API's answers are the
same views the CLI prints with ``--json``. ``herald api`` serves it with the dashboard
(``core.web``); ``core.api.app.create_app`` builds it."""
