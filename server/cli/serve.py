"""``podviews serve``: the HTTP API and maintenance workers, over the given
database or an embedded one."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from server.cli.common import database, settings


def add(sub: Any) -> None:
    serve = sub.add_parser("serve", help="run the HTTP API and maintenance workers; with no "
                           "database URL, an embedded Postgres under PODVIEWS_DATA_DIR")
    serve.add_argument("--host", default=None, help="interface to listen on [PODVIEWS_HOST]")
    serve.add_argument("--port", type=int, default=None, help="port [PODVIEWS_PORT]")
    serve.add_argument("--database-url", default=None,
                       help="database URL [PODVIEWS_DATABASE_URL]; default: embedded")
    serve.add_argument("--workers", type=int, default=None,
                       help="maintenance worker processes beside the API [PODVIEWS_WORKERS]; "
                            "0: run `podviews worker` apart")
    serve.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from server.api.ops.observability import configure_logging
    from server.app import create_app
    from server.cli.supervise import Workers

    config = settings(args)
    with database(args, keep_running=True) as url:
        # uvicorn shuts down gracefully on SIGTERM, then raises it again: let
        # that end this function normally, so workers and the embedded
        # cluster are stopped
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        configure_logging()
        workers = Workers(url, config.workers, config.public_base)
        workers.start()
        app = create_app(url, config, workers=0)

        class Server(uvicorn.Server):
            def handle_exit(self, sig: int, frame: Any) -> None:
                app.state.closing.set()  # event streams end, so the graceful shutdown can
                if app.state.notices is not None:
                    app.state.notices.wake_all()
                super().handle_exit(sig, frame)

        try:
            # no permessage-deflate: compressing each notification once per channel
            # was a quarter of the event loop at 1,000 channels (design note 115)
            Server(uvicorn.Config(app, host=config.host, port=config.port, log_config=None,
                                  ws_per_message_deflate=False)).run()
        finally:
            workers.stop()
    return 0
