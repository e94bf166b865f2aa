#ifndef MEDIAROUTE_CNETLINK_SHIM_H
#define MEDIAROUTE_CNETLINK_SHIM_H

#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <netlink/msg.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if.h>
#include <linux/nl80211.h>

// Macros Swift does not import.
static const int MR_NETLINK_ROUTE = NETLINK_ROUTE;
static const int MR_NETLINK_GENERIC = NETLINK_GENERIC;
static const int MR_RTNLGRP_LINK = RTNLGRP_LINK;
static const int MR_RTNLGRP_IPV4_IFADDR = RTNLGRP_IPV4_IFADDR;
static const int MR_RTNLGRP_IPV6_IFADDR = RTNLGRP_IPV6_IFADDR;
static const int MR_IFF_UP = IFF_UP;
static const int MR_IFF_RUNNING = IFF_RUNNING;
static const int MR_IFF_MULTICAST = IFF_MULTICAST;
static const int MR_IFF_LOOPBACK = IFF_LOOPBACK;

#endif
