"""A TCP proxy on loopback that delays every chunk by a fixed time in each direction (asyncio).

    python benchmarks/latency_proxy.py --target 127.0.0.1:8123 --delay-ms 10

Prints ``listening on PORT`` once it accepts connections; runs until killed. Bandwidth is not
limited: a chunk read at time t is written at t + delay, in order, so a response of many chunks
costs one delay, as on a real link with that latency.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def pump() -> None:
        while True:
            due, data = await queue.get()
            if not data:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(OSError):
            writer.close()

    task = asyncio.create_task(pump())
    try:
        while data := await reader.read(1 << 16):
            queue.put_nowait((loop.time() + delay, data))
    except OSError:
        pass
    queue.put_nowait((0.0, b""))
    await task


async def _serve(target_host: str, target_port: int, delay: float, port: int) -> None:
    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(target_host, target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, server_writer, delay), _pipe(server_reader, client_writer, delay))

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    print(f"listening on {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", required=True, help="host:port to forward to")
    parser.add_argument("--delay-ms", type=float, default=10.0, help="added in each direction (default 10)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    args = parser.parse_args()
    host, _, port = args.target.rpartition(":")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(host, int(port), args.delay_ms / 1000, args.port))


if __name__ == "__main__":
    main()
