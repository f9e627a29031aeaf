-- Cluster mode (docs/cluster.md): the node part of the connection ids of
-- the links that claim a connection, for the sweep of dead nodes' devices
-- (which lists the nodes, then marks one node's links offline) without
-- reading every link. A node alone records connection ids without "/",
-- which the index leaves out.

-- +goose Up
CREATE INDEX device_links_node ON device_links (split_part(connection_id, '/', 1) COLLATE "C")
    WHERE presence <> 'offline' AND strpos(connection_id, '/') > 0;

-- +goose Down
DROP INDEX device_links_node;
