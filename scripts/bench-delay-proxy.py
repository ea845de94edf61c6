#!/usr/bin/env python3
"""A TCP proxy on 127.0.0.1 that holds every piece a client sends for DELAY_MS before passing it
on to the upstream host: each request/answer exchange then costs one DELAY_MS round trip, so a
run's wall time over DELAY_MS counts its round trips in sequence (scripts/bench).

    bench-delay-proxy.py UPSTREAM_HOST:PORT DELAY_MS PORT_FILE

Listens on a free loopback port, written to PORT_FILE; runs until killed.
"""
import asyncio
import sys


async def pipe(reader, writer, delay):
    try:
        while data := await reader.read(65536):
            if delay:
                await asyncio.sleep(delay)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main():
    upstream, delay_ms, port_file = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    host, port = upstream.rsplit(":", 1)
    delay = delay_ms / 1000

    async def serve(client_reader, client_writer):
        server_reader, server_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(
            pipe(client_reader, server_writer, delay),
            pipe(server_reader, client_writer, 0),
        )

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    with open(port_file, "w") as f:
        f.write(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


asyncio.run(main())
