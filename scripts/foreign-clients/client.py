#!/usr/bin/env python3
"""A Python service speaking to bandeja services over a broker, with clients no one here
wrote: the CloudEvents SDK builds and parses the events, each broker's own Python client
(nats-py, pika, redis-py, kafka-python) moves them. The foreign-client tests of the transports run it.

  client.py publish BROKER --url URL --prefix P --partitions N --type T --count C [--copies K]
      publishes C events (ids py-0 … py-<C-1>, data {"n": i}, subject and partition key
      k-<i mod 3>), all of them K times over, then a fence per key (py-fence-0 … 2, data
      n = C … C+2), each on the partition bandeja's routing gives its key; exits once the
      broker has accepted every one.
  client.py consume BROKER --url URL --prefix P --partitions N --count C
      prints `ready` once listening, then one JSON line per event that arrives after
      that ({"attributes": …, "data": …}, parsed by the SDK), and exits after C of them.

BROKER is nats, amqp, redis or kafka (URL: the bootstrap servers). The names are
bandeja's (docs/brokers.md):
  NATS      subject   <prefix>.events.p<N>.<type with characters other than [A-Za-z0-9_-] as _>
  RabbitMQ  exchange  <prefix>.events, routing key p<N>.<type>
  Redis     stream    <prefix>.events.p<N>, fields id, address (= type), type, body
  Kafka     topic     <prefix>.events, partition N, key = the partition key, header
                      bandeja-type = the type
where N is FNV-1a (32 bits) of the partition key, modulo the partition count.
"""

import argparse
import asyncio
import json
import re
import sys
import time

from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent

CONTENT_TYPE = JSONFormat.CONTENT_TYPE
FORMAT = JSONFormat()


def fnv1a(text):
    value = 0x811C9DC5
    for byte in text.encode("utf-8"):
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


def partition_of(key, partitions):
    return fnv1a(key) % max(partitions, 1)


def token(name):
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


KEYS = ["k-0", "k-1", "k-2"]


def event(args, event_id, key, n):
    """(partition, body) of one event of key `key` with data {"n": n}."""
    attributes = {
        "specversion": "1.0",
        "id": event_id,
        "source": "/python/client",
        "type": args.type,
        "subject": key,
        "datacontenttype": "application/json",
        "partitionkey": key,
        "schemaversion": 1,
        "pyclient": "cloudevents-sdk",
    }
    return partition_of(key, args.partitions), FORMAT.write(CloudEvent(attributes, {"n": n}))


def events(args):
    """(partition, body) of each event to publish: every event, then every event again
    (as many rounds as copies), then one fence per key (data n = count + its index),
    which follows every copy on its key's partition."""
    for _ in range(args.copies):
        for i in range(args.count):
            yield event(args, f"py-{i}", KEYS[i % len(KEYS)], i)
    for j, key in enumerate(KEYS):
        yield event(args, f"py-fence-{j}", key, args.count + j)


def printable(body):
    event = FORMAT.read(None, body)
    attributes = {
        name: (value.isoformat() if hasattr(value, "isoformat") else value)
        for name, value in event.get_attributes().items()
    }
    return json.dumps({"attributes": attributes, "data": event.get_data()})


def ready():
    print("ready", flush=True)


# --- NATS JetStream -------------------------------------------------------------------

async def nats_publish(args):
    import nats

    client = await nats.connect(args.url)
    jetstream = client.jetstream()
    for partition, body in events(args):
        subject = f"{args.prefix}.events.p{partition}.{token(args.type)}"
        await jetstream.publish(subject, body, headers={"Content-Type": CONTENT_TYPE})
    await client.close()


async def nats_consume(args):
    import nats
    from nats.js.api import DeliverPolicy

    client = await nats.connect(args.url)
    jetstream = client.jetstream()
    subscription = await jetstream.subscribe(
        f"{args.prefix}.events.>", ordered_consumer=True, deliver_policy=DeliverPolicy.NEW
    )
    ready()
    for _ in range(args.count):
        message = await subscription.next_msg(timeout=args.timeout)
        print(printable(message.data), flush=True)
    await client.close()


# --- RabbitMQ -------------------------------------------------------------------------

def amqp_publish(args):
    import pika

    connection = pika.BlockingConnection(pika.URLParameters(args.url))
    channel = connection.channel()
    channel.confirm_delivery()
    properties = pika.BasicProperties(content_type=CONTENT_TYPE, delivery_mode=2)
    for partition, body in events(args):
        channel.basic_publish(
            exchange=f"{args.prefix}.events",
            routing_key=f"p{partition}.{args.type}",
            body=body,
            properties=properties,
            mandatory=True,
        )
    connection.close()


def amqp_consume(args):
    import pika

    connection = pika.BlockingConnection(pika.URLParameters(args.url))
    channel = connection.channel()
    exchange = f"{args.prefix}.events"
    channel.exchange_declare(exchange=exchange, passive=True)
    queue = channel.queue_declare(queue="", exclusive=True).method.queue
    for partition in range(args.partitions):
        channel.queue_bind(queue=queue, exchange=exchange, routing_key=f"p{partition}.{args.type}")
    ready()
    received = 0
    deadline = time.monotonic() + args.timeout
    for _method, _properties, body in channel.consume(queue, auto_ack=True, inactivity_timeout=1):
        if body is not None:
            print(printable(body), flush=True)
            received += 1
        if received == args.count:
            break
        if time.monotonic() > deadline:
            sys.exit(f"only {received} of {args.count} events within {args.timeout} s")
    connection.close()


# --- Redis Streams --------------------------------------------------------------------

def redis_publish(args):
    import redis

    client = redis.Redis.from_url(args.url)
    for partition, body in events(args):
        parsed = json.loads(body)
        client.xadd(
            f"{args.prefix}.events.p{partition}",
            {"id": parsed["id"], "address": args.type, "type": args.type, "body": body},
        )


def redis_consume(args):
    import redis

    client = redis.Redis.from_url(args.url)
    streams = {}
    for partition in range(args.partitions):
        name = f"{args.prefix}.events.p{partition}"
        last = client.xrevrange(name, count=1)
        streams[name] = last[0][0] if last else b"0-0"
    ready()
    received = 0
    deadline = time.monotonic() + args.timeout
    while received < args.count:
        if time.monotonic() > deadline:
            sys.exit(f"only {received} of {args.count} events within {args.timeout} s")
        for stream, entries in client.xread(streams, block=1000) or []:
            for entry_id, fields in entries:
                streams[stream] = entry_id
                print(printable(fields[b"body"]), flush=True)
                received += 1


# --- Kafka ----------------------------------------------------------------------------

# The protocol versions of Kafka 2.0 (headers, idempotence-era produce), which every broker
# since speaks: librdkafka's mock cluster, which the tests run against, answers some newer
# versions in ways kafka-python does not decode.
KAFKA_API_VERSION = (2, 0)

def kafka_publish(args):
    from kafka import KafkaProducer

    # Not idempotent: tansu 0.6 answers kafka-python's InitProducerId with an unknown
    # error. One message in flight at a time, so a retry cannot reorder a key, and the
    # receiving inbox drops a retry's copy by its id.
    producer = KafkaProducer(
        bootstrap_servers=args.url.split(","),
        acks="all",
        enable_idempotence=False,
        api_version=KAFKA_API_VERSION,
    )
    for partition, body in events(args):
        key = json.loads(body)["partitionkey"]
        producer.send(
            f"{args.prefix}.events",
            value=body,
            key=key.encode("utf-8"),
            partition=partition,
            # bandeja's consumers store only the types their service subscribes to, by
            # this header (without it, every consuming service stores the event).
            headers=[
                ("content-type", CONTENT_TYPE.encode("utf-8")),
                ("bandeja-type", args.type.encode("utf-8")),
            ],
        ).get(timeout=args.timeout)
    producer.flush()
    producer.close()


def kafka_consume(args):
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=args.url.split(","),
        enable_auto_commit=False,
        api_version=KAFKA_API_VERSION,
    )
    partitions = [TopicPartition(f"{args.prefix}.events", p) for p in range(args.partitions)]
    consumer.assign(partitions)
    consumer.seek_to_end(*partitions)
    for partition in partitions:
        consumer.position(partition)
    ready()
    received = 0
    deadline = time.monotonic() + args.timeout
    while received < args.count:
        if time.monotonic() > deadline:
            sys.exit(f"only {received} of {args.count} events within {args.timeout} s")
        for records in consumer.poll(timeout_ms=1000).values():
            for record in records:
                print(printable(record.value), flush=True)
                received += 1
    consumer.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["publish", "consume"])
    parser.add_argument("broker", choices=["nats", "amqp", "redis", "kafka"])
    parser.add_argument("--url", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--type", default="conformance.Ping")
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    run = {
        ("publish", "nats"): lambda: asyncio.run(nats_publish(args)),
        ("consume", "nats"): lambda: asyncio.run(nats_consume(args)),
        ("publish", "amqp"): lambda: amqp_publish(args),
        ("consume", "amqp"): lambda: amqp_consume(args),
        ("publish", "redis"): lambda: redis_publish(args),
        ("consume", "redis"): lambda: redis_consume(args),
        ("publish", "kafka"): lambda: kafka_publish(args),
        ("consume", "kafka"): lambda: kafka_consume(args),
    }[(args.action, args.broker)]
    run()


if __name__ == "__main__":
    main()
