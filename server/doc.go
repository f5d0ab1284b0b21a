// Package server serves RESP2 clients: it reads requests with Redis's
// limits, keeps each connection's state (auth, database, MULTI queue,
// WATCHed key versions, subscriptions), answers connection and admin
// commands itself and sends keyspace commands to a Backend. Its Hub
// delivers published messages to local subscribers.
package server
