"""A publishing thread's long-lived connection to the Celery broker, and the confirmations of a
batch of messages sent on it.

On RabbitMQ (kombu's ``pyamqp`` transport) the channel is put in confirm mode once, every message
of a batch is published without waiting, and the broker's ``basic.ack`` / ``basic.nack`` frames
are read once the whole batch is out: the publishes are numbered from 1 on the channel (AMQP's
delivery tags), an ack with ``multiple`` confirms every tag up to its own. The per-message
``confirm_publish`` of kombu (one round trip per message) is off on this connection, so a
message is only built (:mod:`.messages`) and written, its header table encoded by
:mod:`.properties`. On the other transports (Redis, the in-memory one) each publish is a command
whose reply is the broker's acknowledgement.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Celery
    from kombu.connection import Connection
    from kombu.messaging import Producer


class MessageNacked(Exception):
    """The broker refused the message (``basic.nack``)."""


class ConfirmTimeout(Exception):
    """The broker did not confirm the message within the publish timeout."""


#: Bytes of messages gathered before one write to the broker's socket.
WRITE_BYTES = 256 * 1024

#: Sends one message on the link given (built from its batch's template, or by ``app.send_task``).
Send = Callable[["Link"], None]


class Link:
    """One publishing thread's connection, channel and producer on ``app``'s broker.

    :raises kombu.exceptions.OperationalError: if the broker cannot be reached (one try)
    """

    def __init__(self, app: Celery) -> None:
        options = dict(app.conf.broker_transport_options or {})
        # Confirmations are collected per batch here, not waited for per message.
        options["confirm_publish"] = False
        self.connection: Connection = app.connection_for_write(transport_options=options)
        try:
            self.connection.ensure_connection(max_retries=1)
            self.channel: Any = self.connection.channel()
            self.producer: Producer = app.amqp.Producer(self.channel, auto_declare=False)
            self.confirms = _is_py_amqp(self.channel)
            if self.confirms:
                # py-amqp polls the socket before every publish (a system call and a read with
                # a timeout of 0, the largest cost of a publish here) for the broker's
                # connection.blocked notice, which it only passes to a callback this connection
                # does not set: the notices are read with the confirmations instead.
                capabilities = self.connection.connection.client_properties.get("capabilities")
                if isinstance(capabilities, dict):
                    capabilities["connection.blocked"] = False
                # The header tables encoded in fewer steps (.properties, which needs py-amqp), on
                # this channel only.
                from .properties import use_fast_messages

                use_fast_messages(self.channel)
                self.channel.confirm_select()
                self.channel.events["basic_ack"].add(self._on_ack)
                self.channel.events["basic_nack"].add(self._on_nack)
        except BaseException:
            self.close()
            raise
        #: The queues declared on this connection (Celery declares a message's queue before
        #: publishing it, a lookup and a copy per message: once per connection is enough).
        self.declared: set[str] = set()
        #: The delivery tag of the next publish on the channel.
        self._next_tag = 1
        #: The tag of the first message of the batch being confirmed, and each message's outcome
        #: (None: not confirmed yet; True: acked; an exception: nacked).
        self._first_tag = 1
        self._outcomes: list[bool | Exception | None] = []
        #: Every message below this index is decided (``multiple`` acks move it).
        self._floor = 0

    def send(self, sends: Sequence[Send], timeout: float) -> list[bool | Exception | None]:
        """Publish each of ``sends`` and wait at most ``timeout`` seconds for their confirmations.

        :return: per message: True (confirmed), the exception that failed it (nacked, not
            confirmed in time), or None when the connection failed before it was confirmed
            (the exception is raised after the outcomes are known: see :class:`BrokenBatch`)
        """
        deadline = time.monotonic() + timeout
        self._first_tag, self._floor = self._next_tag, 0
        self._outcomes = [None] * len(sends)
        try:
            with self._coalesced_writes():
                for index, send in enumerate(sends):
                    send(self)
                    self._next_tag += 1
                    if not self.confirms:
                        self._outcomes[index] = True  # the transport's reply was the acknowledgement
            while self.confirms and self._floor < len(sends):
                left = deadline - time.monotonic()
                if left <= 0:
                    late = ConfirmTimeout(f"the broker did not confirm the message within {timeout:g}s")
                    self._outcomes = [late if o is None else o for o in self._outcomes]
                    break
                self.connection.connection.drain_events(timeout=left)
        except Exception as exc:
            raise BrokenBatch(list(self._outcomes), exc) from exc
        return list(self._outcomes)

    @contextlib.contextmanager
    def _coalesced_writes(self) -> Iterator[None]:
        """py-amqp writes each message's frames with a ``sendall`` of their own; within this
        block they are gathered and written :data:`WRITE_BYTES` at a time (a third of a
        publish's cost on this machine was its own system call). Any other transport: as it is."""
        transport: Any = getattr(getattr(self.connection, "connection", None), "transport", None)
        sock = getattr(transport, "sock", None)
        if not self.confirms or sock is None or not hasattr(transport, "_write"):
            yield
            return
        pending = bytearray()

        def gather(data: bytes | memoryview) -> None:
            pending.extend(data)
            if len(pending) >= WRITE_BYTES:
                flush()

        def flush() -> None:
            if pending:
                sock.sendall(pending)
                pending.clear()

        def read_frame(*args: Any, **kwargs: Any) -> Any:
            # A read that may wait (a queue declared on the first message waits for its reply)
            # writes what was gathered first; the poll py-amqp makes at each publish (timeout 0)
            # does not.
            if sock.gettimeout() != 0:
                flush()
            return reads(*args, **kwargs)

        direct, reads = transport._write, transport.read_frame
        transport._write, transport.read_frame = gather, read_frame
        try:
            yield
            flush()
        finally:
            transport._write = direct
            del transport.read_frame  # the class's own again

    def _on_ack(self, delivery_tag: int, multiple: bool) -> None:
        self._decide(delivery_tag, multiple, True)

    def _on_nack(self, delivery_tag: int, multiple: bool) -> None:
        self._decide(delivery_tag, multiple, MessageNacked("the broker refused the message (basic.nack)"))

    def _decide(self, delivery_tag: int, multiple: bool, outcome: bool | Exception) -> None:
        index = delivery_tag - self._first_tag
        if index < 0 or index >= len(self._outcomes):
            return  # a tag of an earlier batch, decided already
        if multiple:
            for below in range(self._floor, index + 1):
                if self._outcomes[below] is None:
                    self._outcomes[below] = outcome
            self._floor = index + 1
        else:
            self._outcomes[index] = outcome
        # Past every message decided (an ack out of order leaves a gap behind it).
        while self._floor < len(self._outcomes) and self._outcomes[self._floor] is not None:
            self._floor += 1

    def close(self) -> None:
        # Closing a broken connection may fail again: it is dropped all the same.
        with contextlib.suppress(Exception):
            self.connection.release()  # type: ignore[no-untyped-call]


class BrokenBatch(Exception):
    """The connection failed during a batch: the outcomes known by then (None: unknown), and why."""

    def __init__(self, outcomes: list[bool | Exception | None], cause: Exception) -> None:
        super().__init__(str(cause))
        self.outcomes = outcomes
        self.cause = cause


def _is_py_amqp(channel: object) -> bool:
    try:
        import amqp  # type: ignore[import-untyped]
    except ImportError:  # kombu without py-amqp: not the pyamqp transport
        return False
    return isinstance(channel, amqp.Channel)
