//! The proxy's channel-id mapping, upstream side.
//!
//! The proxy opens one upstream channel per downstream channel. The pool names channels
//! by its own ids; each miner knows its channels by ids the proxy gives it, unique within
//! that miner's connection. [`ChannelMap`] keeps both directions' bookkeeping that the
//! upstream side needs:
//!
//! * open requests in flight: upstream request id → (connection, downstream request id);
//! * open channels: upstream channel id → (connection, downstream channel id);
//! * upstream groups: group id → member channels (for messages the pool addresses to a
//!   group);
//! * per connection: a handle (the proxy stores the connection's outgoing queue there)
//!   and the next downstream channel id.
//!
//! The reverse map (downstream channel id → upstream channel id), used for every share,
//! lives in the downstream connection's own task, so the share path takes no lock.
//!
//! ```
//! use sv2c_roles::proxy::routing::{ChannelMap, FIRST_DOWNSTREAM_CHANNEL_ID};
//!
//! let mut map = ChannelMap::new();
//! map.add_connection(7, "queue of connection 7");
//! let upstream_request = map.begin_open(7, 1).unwrap(); // the miner's request 1
//! let opened = map.complete_open(upstream_request, 1000, 900).unwrap(); // pool: channel 1000
//! assert_eq!((opened.conn, opened.downstream_request_id), (7, 1));
//! assert_eq!(opened.downstream_channel_id, FIRST_DOWNSTREAM_CHANNEL_ID);
//! assert_eq!(map.route(1000), Some((&"queue of connection 7", FIRST_DOWNSTREAM_CHANNEL_ID)));
//! assert_eq!(map.remove_connection(7), vec![1000]); // to close upstream
//! assert_eq!(map.route(1000), None);
//! ```

use std::collections::{HashMap, HashSet, VecDeque};

use super::shared::shrink_if_sparse;

/// Identifies a downstream connection within one proxy.
pub type ConnId = u64;

/// The group channel id the proxy reports to every miner (its connection's only group).
pub const DOWNSTREAM_GROUP_ID: u32 = 1;

/// The first channel id the proxy gives out on each downstream connection.
pub const FIRST_DOWNSTREAM_CHANNEL_ID: u32 = 2;

/// Channels a miner closed whose routes a connection keeps, newest last
/// ([`ChannelMap::retire_channel`]): the pool's answers to shares sent before or just
/// after the close still reach the miner.
pub const RETIRED_PER_CONNECTION: usize = 8;

/// A channel open request forwarded upstream and not answered yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pending {
    conn: ConnId,
    downstream_request_id: u32,
}

/// Where an upstream channel goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Route {
    conn: ConnId,
    downstream_channel_id: u32,
}

#[derive(Debug)]
struct Connection<T> {
    handle: T,
    next_channel_id: u32,
    upstream_channels: Vec<u32>,
    /// Channels the miner closed, oldest first (at most [`RETIRED_PER_CONNECTION`]).
    retired: VecDeque<u32>,
}

/// A channel that just opened upstream, as seen from downstream
/// ([`ChannelMap::complete_open`]).
#[derive(Debug)]
pub struct Opened<'a, T> {
    /// The connection the channel belongs to.
    pub conn: ConnId,
    /// That connection's handle.
    pub handle: &'a T,
    /// The miner's own request id, to answer with.
    pub downstream_request_id: u32,
    /// The channel id the miner will use.
    pub downstream_channel_id: u32,
}

/// An open request the pool refused ([`ChannelMap::fail_open`]).
#[derive(Debug)]
pub struct Refused<'a, T> {
    /// The connection that asked.
    pub conn: ConnId,
    /// That connection's handle.
    pub handle: &'a T,
    /// The miner's own request id, to answer with.
    pub downstream_request_id: u32,
}

/// Upstream-side channel routing; `T` is the per-connection handle.
#[derive(Debug)]
pub struct ChannelMap<T> {
    connections: HashMap<ConnId, Connection<T>>,
    pending: HashMap<u32, Pending>,
    channels: HashMap<u32, Route>,
    /// Routes of channels the miners closed, for the pool's answers to their shares.
    retired: HashMap<u32, Route>,
    groups: HashMap<u32, HashSet<u32>>,
    /// The group each grouped channel is in (a channel is in at most one group), so that
    /// a departing channel leaves its group in O(1).
    group_of: HashMap<u32, u32>,
    next_request_id: u32,
}

impl<T> Default for ChannelMap<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> ChannelMap<T> {
    /// An empty map.
    pub fn new() -> Self {
        ChannelMap {
            connections: HashMap::new(),
            pending: HashMap::new(),
            channels: HashMap::new(),
            retired: HashMap::new(),
            groups: HashMap::new(),
            group_of: HashMap::new(),
            next_request_id: 1,
        }
    }

    /// Registers a downstream connection and its handle.
    pub fn add_connection(&mut self, conn: ConnId, handle: T) {
        self.connections.insert(
            conn,
            Connection {
                handle,
                next_channel_id: FIRST_DOWNSTREAM_CHANNEL_ID,
                upstream_channels: Vec::new(),
                retired: VecDeque::new(),
            },
        );
    }

    /// The handle of a connection.
    pub fn handle(&self, conn: ConnId) -> Option<&T> {
        self.connections.get(&conn).map(|c| &c.handle)
    }

    /// The handles of every registered connection.
    pub fn handles(&self) -> impl Iterator<Item = &T> + '_ {
        self.connections.values().map(|c| &c.handle)
    }

    /// Forgets a connection, its pending requests and its channels; returns its upstream
    /// channel ids (which the proxy should close upstream).
    pub fn remove_connection(&mut self, conn: ConnId) -> Vec<u32> {
        let Some(c) = self.connections.remove(&conn) else {
            return Vec::new();
        };
        self.pending.retain(|_, p| p.conn != conn);
        for &up in &c.upstream_channels {
            self.channels.remove(&up);
            self.leave_group(up);
        }
        for up in &c.retired {
            self.retired.remove(up);
        }
        shrink_if_sparse(&mut self.connections);
        shrink_if_sparse(&mut self.pending);
        shrink_if_sparse(&mut self.channels);
        shrink_if_sparse(&mut self.retired);
        shrink_if_sparse(&mut self.groups);
        shrink_if_sparse(&mut self.group_of);
        c.upstream_channels
    }

    /// Records an open request of `conn` and returns the request id to use upstream, or
    /// `None` if the connection is unknown.
    pub fn begin_open(&mut self, conn: ConnId, downstream_request_id: u32) -> Option<u32> {
        if !self.connections.contains_key(&conn) {
            return None;
        }
        let mut id = self.next_request_id;
        while self.pending.contains_key(&id) {
            id = id.wrapping_add(1);
        }
        self.next_request_id = id.wrapping_add(1);
        self.pending.insert(
            id,
            Pending {
                conn,
                downstream_request_id,
            },
        );
        Some(id)
    }

    /// The pool opened a channel for `upstream_request_id`: records the route and gives
    /// the channel its downstream id. `None` if nobody is waiting for that request any
    /// more (the connection went away): the caller should close the channel upstream.
    pub fn complete_open(
        &mut self,
        upstream_request_id: u32,
        upstream_channel_id: u32,
        upstream_group_id: u32,
    ) -> Option<Opened<'_, T>> {
        let p = self.pending.remove(&upstream_request_id)?;
        if !self.connections.contains_key(&p.conn) {
            return None;
        }
        self.join_group(upstream_group_id, upstream_channel_id);
        let c = self.connections.get_mut(&p.conn)?;
        let downstream_channel_id = c.next_channel_id;
        c.next_channel_id = c
            .next_channel_id
            .wrapping_add(1)
            .max(FIRST_DOWNSTREAM_CHANNEL_ID);
        c.upstream_channels.push(upstream_channel_id);
        self.channels.insert(
            upstream_channel_id,
            Route {
                conn: p.conn,
                downstream_channel_id,
            },
        );
        Some(Opened {
            conn: p.conn,
            handle: &c.handle,
            downstream_request_id: p.downstream_request_id,
            downstream_channel_id,
        })
    }

    /// The pool refused `upstream_request_id`. `None` if nobody is waiting for it.
    pub fn fail_open(&mut self, upstream_request_id: u32) -> Option<Refused<'_, T>> {
        let p = self.pending.remove(&upstream_request_id)?;
        let c = self.connections.get(&p.conn)?;
        Some(Refused {
            conn: p.conn,
            handle: &c.handle,
            downstream_request_id: p.downstream_request_id,
        })
    }

    /// Where frames for `upstream_channel_id` go: the connection's handle and the
    /// downstream channel id to write into the frame.
    #[inline]
    pub fn route(&self, upstream_channel_id: u32) -> Option<(&T, u32)> {
        let r = self.channels.get(&upstream_channel_id)?;
        let c = self.connections.get(&r.conn)?;
        Some((&c.handle, r.downstream_channel_id))
    }

    /// The connection owning `upstream_channel_id`.
    pub fn owner(&self, upstream_channel_id: u32) -> Option<ConnId> {
        self.channels.get(&upstream_channel_id).map(|r| r.conn)
    }

    /// The member channels of an upstream group, in no particular order (`None` if
    /// `group_id` is not a group with members).
    pub fn group(&self, group_id: u32) -> Option<impl Iterator<Item = u32> + '_> {
        self.groups.get(&group_id).map(|m| m.iter().copied())
    }

    /// Moves `channels` into an upstream group (`SetGroupChannel`): each leaves the group
    /// it was in. Members not named stay (the message adds channels to a group).
    pub fn set_group(&mut self, group_id: u32, channels: impl IntoIterator<Item = u32>) {
        for channel in channels {
            self.join_group(group_id, channel);
        }
    }

    fn join_group(&mut self, group_id: u32, channel: u32) {
        if self.group_of.get(&channel) == Some(&group_id) {
            return;
        }
        self.leave_group(channel);
        self.groups.entry(group_id).or_default().insert(channel);
        self.group_of.insert(channel, group_id);
    }

    fn leave_group(&mut self, channel: u32) {
        let Some(group_id) = self.group_of.remove(&channel) else {
            return;
        };
        if let Some(members) = self.groups.get_mut(&group_id) {
            members.remove(&channel);
            if members.is_empty() {
                self.groups.remove(&group_id);
            }
        }
    }

    /// Number of groups with members and of grouped channels (for tests and statistics:
    /// both shrink as channels close).
    pub fn group_sizes(&self) -> (usize, usize) {
        (self.groups.len(), self.group_of.len())
    }

    /// Forgets one channel (closed by either side); returns its connection and downstream
    /// id.
    pub fn close_channel(&mut self, upstream_channel_id: u32) -> Option<(ConnId, u32)> {
        let r = self.channels.remove(&upstream_channel_id)?;
        if let Some(c) = self.connections.get_mut(&r.conn) {
            c.upstream_channels.retain(|&u| u != upstream_channel_id);
        }
        self.leave_group(upstream_channel_id);
        Some((r.conn, r.downstream_channel_id))
    }

    /// The miner closed a channel: it is forgotten as [`close_channel`](Self::close_channel)
    /// does, but its route is kept among its connection's last [`RETIRED_PER_CONNECTION`]
    /// closed channels ([`retired_route`](Self::retired_route)) until the connection
    /// goes, so that the pool's answers to the shares the miner sent on it still reach
    /// the miner.
    pub fn retire_channel(&mut self, upstream_channel_id: u32) -> Option<(ConnId, u32)> {
        let (conn, downstream) = self.close_channel(upstream_channel_id)?;
        if let Some(c) = self.connections.get_mut(&conn) {
            if c.retired.len() == RETIRED_PER_CONNECTION
                && let Some(oldest) = c.retired.pop_front()
            {
                self.retired.remove(&oldest);
            }
            c.retired.push_back(upstream_channel_id);
            self.retired.insert(
                upstream_channel_id,
                Route {
                    conn,
                    downstream_channel_id: downstream,
                },
            );
        }
        Some((conn, downstream))
    }

    /// Where the pool's answers for a channel the miner closed go
    /// ([`retire_channel`](Self::retire_channel)): as [`route`](Self::route).
    pub fn retired_route(&self, upstream_channel_id: u32) -> Option<(&T, u32)> {
        let r = self.retired.get(&upstream_channel_id)?;
        let c = self.connections.get(&r.conn)?;
        Some((&c.handle, r.downstream_channel_id))
    }

    /// Number of open channels.
    pub fn channel_count(&self) -> usize {
        self.channels.len()
    }

    /// Number of registered connections.
    pub fn connection_count(&self) -> usize {
        self.connections.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_of_two_connections_get_per_connection_ids() {
        let mut map = ChannelMap::new();
        map.add_connection(1, 'a');
        map.add_connection(2, 'b');
        let r1 = map.begin_open(1, 10).unwrap();
        let r2 = map.begin_open(2, 10).unwrap();
        let r3 = map.begin_open(1, 11).unwrap();
        assert!(
            r1 != r2 && r2 != r3 && r1 != r3,
            "upstream request ids are unique"
        );

        // Answers arrive in any order.
        let o2 = map.complete_open(r2, 501, 900).unwrap();
        assert_eq!(
            (
                o2.conn,
                *o2.handle,
                o2.downstream_request_id,
                o2.downstream_channel_id
            ),
            (2, 'b', 10, FIRST_DOWNSTREAM_CHANNEL_ID)
        );
        let o1 = map.complete_open(r1, 502, 900).unwrap();
        assert_eq!(
            (o1.conn, o1.downstream_channel_id),
            (1, FIRST_DOWNSTREAM_CHANNEL_ID)
        );
        let o3 = map.complete_open(r3, 503, 900).unwrap();
        assert_eq!(
            (o3.conn, o3.downstream_request_id, o3.downstream_channel_id),
            (1, 11, FIRST_DOWNSTREAM_CHANNEL_ID + 1)
        );

        assert_eq!(map.route(501), Some((&'b', FIRST_DOWNSTREAM_CHANNEL_ID)));
        assert_eq!(map.route(502), Some((&'a', FIRST_DOWNSTREAM_CHANNEL_ID)));
        assert_eq!(
            map.route(503),
            Some((&'a', FIRST_DOWNSTREAM_CHANNEL_ID + 1))
        );
        assert_eq!(map.route(504), None);
        assert_eq!(sorted(map.group(900)), Some(vec![501, 502, 503]));
        assert_eq!(map.channel_count(), 3);

        // A request is answered once.
        assert!(map.complete_open(r1, 600, 900).is_none());
    }

    #[test]
    fn removing_a_connection_drops_its_routes_and_pending_requests() {
        let mut map = ChannelMap::new();
        map.add_connection(1, ());
        map.add_connection(2, ());
        let a = map.begin_open(1, 1).unwrap();
        let b = map.begin_open(2, 1).unwrap();
        let late = map.begin_open(1, 2).unwrap();
        map.complete_open(a, 100, 9).unwrap();
        map.complete_open(b, 200, 9).unwrap();

        assert_eq!(map.remove_connection(1), vec![100]);
        assert_eq!(map.route(100), None);
        assert!(map.route(200).is_some());
        // The pool answers a request of the departed connection: nobody takes it.
        assert!(map.complete_open(late, 101, 9).is_none());
        assert!(map.fail_open(late).is_none());
        assert_eq!(map.remove_connection(1), Vec::<u32>::new());
        assert_eq!(map.connection_count(), 1);
    }

    #[test]
    fn refusals_and_closes() {
        let mut map = ChannelMap::new();
        map.add_connection(5, "q");
        assert_eq!(map.begin_open(6, 1), None, "unknown connection");
        let r = map.begin_open(5, 42).unwrap();
        let refused = map.fail_open(r).unwrap();
        assert_eq!((refused.conn, refused.downstream_request_id), (5, 42));
        assert!(map.fail_open(r).is_none());

        let r = map.begin_open(5, 43).unwrap();
        map.complete_open(r, 77, 1).unwrap();
        assert_eq!(map.owner(77), Some(5));
        assert_eq!(
            map.close_channel(77),
            Some((5, FIRST_DOWNSTREAM_CHANNEL_ID))
        );
        assert_eq!(map.close_channel(77), None);
        assert_eq!(sorted(map.group(1)), None, "an empty group is forgotten");
        assert_eq!(map.remove_connection(5), Vec::<u32>::new());
    }

    /// A closed channel's answers still route; the oldest retired route goes when more
    /// than [`RETIRED_PER_CONNECTION`] channels closed, and all go with the connection.
    #[test]
    fn retired_routes_are_bounded_and_leave_with_the_connection() {
        let mut map = ChannelMap::new();
        map.add_connection(1, ());
        let mut upstream = Vec::new();
        for i in 0..=RETIRED_PER_CONNECTION as u32 {
            let r = map.begin_open(1, i).unwrap();
            map.complete_open(r, 100 + i, 0).unwrap();
            upstream.push(100 + i);
        }
        for &up in &upstream {
            assert!(map.retire_channel(up).is_some());
            assert_eq!(map.route(up), None);
        }
        assert_eq!(map.retired_route(upstream[0]), None);
        for &up in &upstream[1..] {
            assert!(map.retired_route(up).is_some());
        }
        assert_eq!(map.channel_count(), 0);
        map.remove_connection(1);
        assert!(map.retired.is_empty());
    }

    #[test]
    fn groups_can_be_replaced() {
        let mut map: ChannelMap<()> = ChannelMap::new();
        map.set_group(3, [10, 11]);
        assert_eq!(sorted(map.group(3)), Some(vec![10, 11]));
        map.set_group(4, [11, 12]);
        assert_eq!(sorted(map.group(3)), Some(vec![10]), "11 moved to group 4");
        assert_eq!(sorted(map.group(4)), Some(vec![11, 12]));
        assert_eq!(sorted(map.group(5)), None);
    }

    fn sorted(members: Option<impl Iterator<Item = u32>>) -> Option<Vec<u32>> {
        members.map(|m| {
            let mut v: Vec<u32> = m.collect();
            v.sort_unstable();
            v
        })
    }

    #[test]
    fn departed_connections_leave_their_groups() {
        // 10,000 miners come and go, all in one pool group: nothing of them stays.
        let mut map = ChannelMap::new();
        for conn in 0..10_000u64 {
            map.add_connection(conn, ());
            let r = map.begin_open(conn, 1).unwrap();
            map.complete_open(r, conn as u32 + 1, 7).unwrap();
            if conn % 2 == 0 {
                assert_eq!(map.remove_connection(conn), vec![conn as u32 + 1]);
            } else {
                assert!(map.close_channel(conn as u32 + 1).is_some());
                map.remove_connection(conn);
            }
        }
        assert_eq!(map.group_sizes(), (0, 0));
        assert_eq!(map.channel_count(), 0);
        assert_eq!(map.connection_count(), 0);
    }
}
