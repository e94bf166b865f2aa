/*
 * libdbus-1.a refers to two libsystemd functions, used only when a libdbus
 * *server* listens on a `systemd:` address (sockets passed by systemd socket
 * activation; dbus-daemon does that). MediaRoute only connects to buses, so
 * these are never called; linking libsystemd for them would bring it and its
 * six libraries into the daemon (~0.7 MB resident). They answer as libsystemd
 * does when no socket was passed.
 */
int sd_listen_fds(int unset_environment)
{
    (void)unset_environment;
    return 0;
}

int sd_is_socket(int fd, int family, int type, int listening)
{
    (void)fd;
    (void)family;
    (void)type;
    (void)listening;
    return 0;
}
