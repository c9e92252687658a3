"""The runs API: the stateful run monitor, recover (memory, lessons, circuit break, snapshots,
briefing), their routes and their DynamoDB access."""
