# -*- coding: utf-8 -*-
'''A BlueZ 5 mock for MediaRoute's tests (a python-dbusmock template).

Unlike dbusmock's stock bluez5 template it has: discovery that works with or
without a filter, devices whose Connect follows a script (InProgress,
le-connection-abort-by-local, Connected=false first, GATT objects before or
after ServicesResolved), Pair that calls the registered Agent1, a Volume
Control Service with the change-counter rule and notifications, AcquireWrite
file descriptors, and MediaTransport1. Control methods are on
org.mediaroute.BlueZMock at /.
'''

import socket
import time

import dbus
import dbus.service
from gi.repository import GLib

from dbusmock import OBJECT_MANAGER_IFACE, mockobject

BUS_NAME = 'org.bluez'
MAIN_OBJ = '/'
SYSTEM_BUS = True
IS_OBJECT_MANAGER = True

MOCK_IFACE = 'org.mediaroute.BlueZMock'
AGENT_MANAGER_IFACE = 'org.bluez.AgentManager1'
ADAPTER_IFACE = 'org.bluez.Adapter1'
DEVICE_IFACE = 'org.bluez.Device1'
SERVICE_IFACE = 'org.bluez.GattService1'
CHAR_IFACE = 'org.bluez.GattCharacteristic1'
TRANSPORT_IFACE = 'org.bluez.MediaTransport1'
MEDIA_IFACE = 'org.bluez.Media1'
ENDPOINT_IFACE = 'org.bluez.MediaEndpoint1'
A2DP_SOURCE_UUID = '0000110a-0000-1000-8000-00805f9b34fb'
A2DP_SINK_UUID = '0000110b-0000-1000-8000-00805f9b34fb'
AGENT_IFACE = 'org.bluez.Agent1'

VCS_UUID = '00001844-0000-1000-8000-00805f9b34fb'
VOLUME_STATE_UUID = '00002b7d-0000-1000-8000-00805f9b34fb'
VOLUME_CONTROL_POINT_UUID = '00002b7e-0000-1000-8000-00805f9b34fb'

# Per-device test state, by object path.
STATE = {}
# The agent: (bus name, path).
AGENT = {'sender': None, 'path': None}
# Registered media endpoints: dicts of sender, path, uuid, codec, capabilities.
ENDPOINTS = []
# The sender of the RegisterEndpoint call being handled (seen first by the message filter).
PENDING_ENDPOINT_SENDER = {'sender': None}
# The mock's bus connection, to call registered endpoints.
BUS = {'connection': None}


def error(name, message=''):
    return dbus.exceptions.DBusException(message, name='org.bluez.Error.' + name)


def emit_changed(obj, iface, changes):
    obj.EmitSignal(dbus.PROPERTIES_IFACE, 'PropertiesChanged', 'sa{sv}as', [iface, changes, []])


def set_props(path, iface, changes):
    obj = mockobject.objects[path]
    for key, value in changes.items():
        obj.props[iface][key] = value
    emit_changed(obj, iface, changes)


def interfaces_added(path, iface, props):
    mockobject.objects['/'].EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesAdded', 'oa{sa{sv}}', [dbus.ObjectPath(path), {iface: props}])


def remove_object(path, ifaces):
    if path in mockobject.objects:
        mockobject.objects['/'].RemoveObject(path)
        mockobject.objects['/'].EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesRemoved', 'oas', [dbus.ObjectPath(path), ifaces])


# --- AgentManager1 ---------------------------------------------------------

def RegisterAgent(self, path, capability):
    # The caller's bus name is recorded by the message filter installed in load().
    AGENT['path'] = str(path)
    AGENT['capability'] = str(capability)


def RequestDefaultAgent(self, path):
    if AGENT.get('path') != str(path):
        raise error('DoesNotExist', 'agent not registered')


def UnregisterAgent(self, path):
    if AGENT.get('path') == str(path):
        AGENT['path'] = None


# --- Adapter1 --------------------------------------------------------------

def StartDiscovery(adapter):
    if adapter.props[ADAPTER_IFACE]['Discovering']:
        raise error('InProgress', 'Operation already in progress')
    set_props(adapter.path, ADAPTER_IFACE, {'Discovering': dbus.Boolean(True, variant_level=1)})


def StopDiscovery(adapter):
    if not adapter.props[ADAPTER_IFACE]['Discovering']:
        raise error('Failed', 'No discovery started')
    set_props(adapter.path, ADAPTER_IFACE, {'Discovering': dbus.Boolean(False, variant_level=1)})


def SetDiscoveryFilter(adapter, discovery_filter):
    STATE.setdefault(adapter.path, {})['filter'] = dict(discovery_filter)
    STATE[adapter.path].setdefault('filters', []).append(dict(discovery_filter))


def RemoveDevice(adapter, path):
    remove_device(str(path))


def remove_device(path):
    for child in [p for p in list(mockobject.objects) if p.startswith(path + '/')]:
        ifaces = list(mockobject.objects[child].props.keys())
        remove_object(child, ifaces)
    remove_object(path, [DEVICE_IFACE])
    STATE.pop(path, None)


# --- Device1 ---------------------------------------------------------------

def Connect(device):
    state = STATE.setdefault(device.path, {})
    script = state.get('connect', [])
    step = script.pop(0) if script else 'ok'
    state.setdefault('connect_calls', 0)
    state['connect_calls'] += 1
    if step == 'inprogress':
        raise error('InProgress', 'In Progress')
    if step == 'abort':
        # Connected goes true then false, like a link the controller gave up on.
        set_props(device.path, DEVICE_IFACE, {'Connected': dbus.Boolean(True, variant_level=1)})
        GLib.timeout_add(30, lambda: set_props(device.path, DEVICE_IFACE, {'Connected': dbus.Boolean(False, variant_level=1)}) and False)
        raise error('Failed', 'le-connection-abort-by-local')
    if step == 'drop':
        set_props(device.path, DEVICE_IFACE, {'Connected': dbus.Boolean(True, variant_level=1)})
        GLib.timeout_add(20, lambda: set_props(device.path, DEVICE_IFACE, {'Connected': dbus.Boolean(False, variant_level=1)}) and False)
        return
    if step == 'fail':
        raise error('Failed', 'Software caused connection abort')
    set_props(device.path, DEVICE_IFACE, {'Connected': dbus.Boolean(True, variant_level=1)})
    late = step == 'late-gatt'

    def resolve():
        if not late:
            add_gatt(device.path)
        set_props(device.path, DEVICE_IFACE, {'ServicesResolved': dbus.Boolean(True, variant_level=1)})
        if late:
            GLib.timeout_add(30, lambda: add_gatt(device.path) and False)
        return False
    GLib.timeout_add(20, resolve)


def Disconnect(device):
    clear_a2dp(device.path)
    set_props(device.path, DEVICE_IFACE, {
        'ServicesResolved': dbus.Boolean(False, variant_level=1), 'Connected': dbus.Boolean(False, variant_level=1)})


def Pair(device):
    state = STATE.setdefault(device.path, {})
    method = state.get('pairing', 'none')
    expected = state.get('code', '')
    if device.props[DEVICE_IFACE]['Paired']:
        raise error('AlreadyExists', 'Already Paired')
    if method != 'none':
        if not AGENT.get('path') or not AGENT.get('sender'):
            raise error('AuthenticationFailed', 'no agent')
        bus = mockobject.objects['/'].connection
        agent = dbus.Interface(bus.get_object(AGENT['sender'], AGENT['path']), AGENT_IFACE)
        try:
            if method == 'passkey':
                answer = '%06d' % int(agent.RequestPasskey(dbus.ObjectPath(device.path), timeout=30))
            elif method == 'pin':
                answer = str(agent.RequestPinCode(dbus.ObjectPath(device.path), timeout=30))
            elif method == 'display-passkey':
                agent.DisplayPasskey(dbus.ObjectPath(device.path), dbus.UInt32(int(expected)), dbus.UInt16(0), timeout=30)
                answer = expected
            elif method == 'display-pin':
                agent.DisplayPinCode(dbus.ObjectPath(device.path), expected, timeout=30)
                answer = expected
            elif method == 'confirm':
                agent.RequestConfirmation(dbus.ObjectPath(device.path), dbus.UInt32(int(expected)), timeout=30)
                answer = expected
            elif method == 'cancel':
                GLib.idle_add(lambda: agent.Cancel(ignore_reply=True) and False)
                agent.RequestPasskey(dbus.ObjectPath(device.path), timeout=30)
                answer = None
            else:
                answer = expected
        except dbus.exceptions.DBusException as e:
            name = e.get_dbus_name() or ''
            if name.endswith('.Canceled'):
                raise error('AuthenticationCanceled', 'Authentication Canceled')
            raise error('AuthenticationRejected', 'Authentication Rejected')
        if answer != expected:
            raise error('AuthenticationFailed', 'Authentication Failed')
    set_props(device.path, DEVICE_IFACE, {'Paired': dbus.Boolean(True, variant_level=1)})


def CancelPairing(device):
    pass


# --- GATT: the Volume Control Service --------------------------------------

def add_gatt(device_path):
    state = STATE.get(device_path, {})
    vcs = state.get('vcs')
    if vcs is None or vcs.get('added'):
        return
    vcs['added'] = True
    service = device_path + '/service0010'
    root = mockobject.objects['/']
    root.AddObject(service, SERVICE_IFACE, {
        'UUID': VCS_UUID, 'Device': dbus.ObjectPath(device_path), 'Primary': True, 'Includes': dbus.Array([], signature='o'),
    }, [])
    interfaces_added(service, SERVICE_IFACE, mockobject.objects[service].props[SERVICE_IFACE])
    state_char = service + '/char0011'
    root.AddObject(state_char, CHAR_IFACE, {
        'UUID': VOLUME_STATE_UUID, 'Service': dbus.ObjectPath(service), 'Flags': ['read', 'notify'],
        'Notifying': False, 'Value': dbus.Array(volume_state(vcs), signature='y'),
    }, [
        ('ReadValue', 'a{sv}', 'ay', lambda self, options: dbus.Array(volume_state(vcs), signature='y')),
        ('StartNotify', '', '', lambda self: set_props(self.path, CHAR_IFACE, {'Notifying': dbus.Boolean(True, variant_level=1)})),
        ('AcquireNotify', 'a{sv}', 'hq', lambda self, options: acquire_notify(vcs)),
        ('StopNotify', '', '', lambda self: set_props(self.path, CHAR_IFACE, {'Notifying': dbus.Boolean(False, variant_level=1)})),
    ])
    interfaces_added(state_char, CHAR_IFACE, mockobject.objects[state_char].props[CHAR_IFACE])
    point = service + '/char0013'
    root.AddObject(point, CHAR_IFACE, {
        'UUID': VOLUME_CONTROL_POINT_UUID, 'Service': dbus.ObjectPath(service), 'Flags': ['write', 'write-without-response'],
        'Notifying': False, 'Value': dbus.Array([], signature='y'),
    }, [
        ('WriteValue', 'aya{sv}', '', lambda self, value, options: control_point(device_path, vcs, [int(b) for b in value])),
        ('AcquireWrite', 'a{sv}', 'hq', lambda self, options: acquire_write(device_path)),
    ])
    interfaces_added(point, CHAR_IFACE, mockobject.objects[point].props[CHAR_IFACE])
    vcs['state_path'] = state_char


def volume_state(vcs):
    return [vcs['volume'], 1 if vcs['mute'] else 0, vcs['counter']]


def acquire_notify(vcs):
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    vcs['notify_socket'] = ours
    fd = dbus.types.UnixFd(theirs.fileno())
    theirs.close()
    return (fd, dbus.UInt16(23))


def notify(vcs):
    if vcs.get('notify_socket') is not None:
        try:
            vcs['notify_socket'].send(bytes(volume_state(vcs)))
        except OSError:
            vcs['notify_socket'] = None
    path = vcs.get('state_path')
    if path and path in mockobject.objects:
        obj = mockobject.objects[path]
        obj.props[CHAR_IFACE]['Value'] = dbus.Array(volume_state(vcs), signature='y')
        if obj.props[CHAR_IFACE]['Notifying']:
            emit_changed(obj, CHAR_IFACE, {'Value': dbus.Array(volume_state(vcs), signature='y', variant_level=1)})


def control_point(device_path, vcs, value):
    vcs.setdefault('writes', []).append(value)
    if len(value) < 2:
        raise error('Failed', 'Operation failed with ATT error: 0x0d')
    opcode, counter = value[0], value[1]
    if counter != vcs['counter']:
        raise error('Failed', 'Operation failed with ATT error: 0x80')
    step = vcs.get('step', 16)
    if opcode == 0x00:
        vcs['volume'] = max(0, vcs['volume'] - step)
    elif opcode == 0x01:
        vcs['volume'] = min(255, vcs['volume'] + step)
    elif opcode == 0x02:
        vcs['mute'] = False
        vcs['volume'] = max(0, vcs['volume'] - step)
    elif opcode == 0x03:
        vcs['mute'] = False
        vcs['volume'] = min(255, vcs['volume'] + step)
    elif opcode == 0x04:
        if len(value) < 3:
            raise error('Failed', 'Operation failed with ATT error: 0x0d')
        vcs['volume'] = value[2]
    elif opcode == 0x05:
        vcs['mute'] = False
    elif opcode == 0x06:
        vcs['mute'] = True
    else:
        raise error('Failed', 'Operation failed with ATT error: 0x81')
    vcs['counter'] = (vcs['counter'] + 1) % 256
    notify(vcs)


def recording_socket(device_path, key):
    '''A socket pair: our end records every packet under STATE[device][key]; returns the client's fd.'''
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    state = STATE.setdefault(device_path, {})
    state.setdefault(key, [])
    ours.setblocking(False)
    state[key + '_socket'] = ours

    def readable(_fd, _condition):
        try:
            data = ours.recv(65536)
        except BlockingIOError:
            return True
        if not data:
            return False
        state[key].append(list(data))
        return True
    state[key + '_reader'] = readable
    if not state.get('stalled'):
        state[key + '_watch'] = GLib.io_add_watch(ours.fileno(), GLib.IO_IN | GLib.IO_HUP, readable)
    fd = dbus.types.UnixFd(theirs.fileno())
    theirs.close()
    return fd


def acquire_write(device_path):
    fd = recording_socket(device_path, 'acquired')
    return (fd, dbus.UInt16(STATE[device_path].get('mtu', 64)))


# --- MediaTransport1 ------------------------------------------------------

def transport_acquire(device_path):
    # As bluetoothd (transport.c): a stream the speaker configured but has not opened yet
    # cannot be resumed, and Acquire answers NotAuthorized.
    if time.monotonic() < STATE[device_path].get('opens_at', 0):
        raise error('NotAuthorized', 'Operation Not Authorized')
    fd = recording_socket(device_path, 'transport_packets')
    set_props(device_path + '/fd0', TRANSPORT_IFACE, {'State': dbus.String('active', variant_level=1)})
    return (fd, dbus.UInt16(672), dbus.UInt16(STATE[device_path].get('omtu', 895)))


def AddMediaTransport(self, path, codec, configuration, volume, uuid):
    path = str(path)
    transport = path + '/fd0'
    self.AddObject(transport, TRANSPORT_IFACE, {
        'Device': dbus.ObjectPath(path), 'UUID': uuid, 'Codec': dbus.Byte(codec), 'Configuration': dbus.Array(configuration, signature='y'),
        'State': 'idle', 'Volume': dbus.UInt16(volume), 'Delay': dbus.UInt16(150),
    }, [
        ('Acquire', '', 'hqq', lambda obj: transport_acquire(path)),
        ('TryAcquire', '', 'hqq', lambda obj: transport_acquire(path)),
        ('Release', '', '', lambda obj: set_props(transport, TRANSPORT_IFACE, {'State': dbus.String('idle', variant_level=1)})),
    ])
    interfaces_added(transport, TRANSPORT_IFACE, mockobject.objects[transport].props[TRANSPORT_IFACE])
    return transport


def TransportPackets(self, path):
    return dbus.Array([dbus.Array(p, signature='y') for p in STATE.get(str(path), {}).get('transport_packets', [])], signature='ay')


def SpeakerSetsTransportVolume(self, path, volume):
    set_props(str(path) + '/fd0', TRANSPORT_IFACE, {'Volume': dbus.UInt16(volume, variant_level=1)})


def SpeakerSuspends(self, path):
    '''The speaker suspends the stream (AVDTP Suspend): bluetoothd closes the acquired
    socket and the transport goes back to idle.'''
    state = STATE.get(str(path), {})
    ours = state.pop('transport_packets_socket', None)
    if ours is not None:
        ours.close()
    set_props(str(path) + '/fd0', TRANSPORT_IFACE, {'State': dbus.String('idle', variant_level=1)})


def SpeakerDropsAudioProfile(self, path):
    '''The A2DP profile disconnects while the device stays connected: the endpoint's
    configuration is cleared and the transport removed.'''
    state = STATE.get(str(path), {})
    ours = state.pop('transport_packets_socket', None)
    if ours is not None:
        ours.close()
    clear_a2dp(str(path))


# --- Media1 and A2DP ------------------------------------------------------

def RegisterEndpoint(adapter, path, properties):
    sender = PENDING_ENDPOINT_SENDER['sender']
    uuid = str(properties.get('UUID', '')).lower()
    if any(e['sender'] == sender and e['path'] == str(path) for e in ENDPOINTS):
        raise error('AlreadyExists', 'Already Exists')
    if 'Capabilities' not in properties or 'Codec' not in properties:
        raise error('InvalidArguments', 'Invalid arguments in method call')
    ENDPOINTS.append({'sender': sender, 'path': str(path), 'uuid': uuid, 'codec': int(properties['Codec']),
                      'capabilities': [int(b) for b in properties['Capabilities']], 'adapter': adapter.path,
                      'delay_reporting': bool(properties.get('DelayReporting', False))})
    update_adapter_services(adapter.path)


def UnregisterEndpoint(adapter, path):
    ENDPOINTS[:] = [e for e in ENDPOINTS if e['path'] != str(path)]
    update_adapter_services(adapter.path)


def update_adapter_services(adapter_path):
    '''As bluetoothd: the adapter lists the A2DP Source service (its SDP record) while any client
    has a source endpoint registered on it (another program's too: OTHER_SOURCES).'''
    adapter_path = str(adapter_path)
    if adapter_path not in mockobject.objects:
        return
    uuids = [str(u) for u in mockobject.objects[adapter_path].props[ADAPTER_IFACE]['UUIDs'] if str(u) != A2DP_SOURCE_UUID]
    if adapter_path in OTHER_SOURCES or any(e['uuid'] == A2DP_SOURCE_UUID and str(e['adapter']) == adapter_path for e in ENDPOINTS):
        uuids.append(A2DP_SOURCE_UUID)
    if sorted(uuids) != sorted(str(u) for u in mockobject.objects[adapter_path].props[ADAPTER_IFACE]['UUIDs']):
        set_props(adapter_path, ADAPTER_IFACE, {'UUIDs': dbus.Array(uuids, signature='s', variant_level=1)})


# Adapters where another program (PipeWire's bluez5 plugin, bluez-alsa) has an A2DP source endpoint.
OTHER_SOURCES = set()


def AnotherSourceRegisters(self, adapter_name, registered):
    '''Another A2DP source (as PipeWire's bluez5 plugin) registers (or unregisters) its endpoints
    on the adapter: only its service record is modelled, not its endpoints.'''
    adapter_path = '/org/bluez/' + str(adapter_name)
    if registered:
        OTHER_SOURCES.add(adapter_path)
    else:
        OTHER_SOURCES.discard(adapter_path)
    update_adapter_services(adapter_path)


def remote_seps(state):
    '''The speaker's stream endpoints: (codec byte, capabilities) pairs.'''
    if 'sink_seps' in state:
        return state['sink_seps']
    return [(0, state['sink_caps'])] if state.get('sink_caps') is not None else []


def same_codec(endpoint, codec, caps):
    '''As bluetoothd matches a local endpoint with a remote one: the codec byte, and for vendor
    codecs (0xFF) the vendor and codec ids the element starts with.'''
    if endpoint['codec'] != codec:
        return False
    return codec != 0xFF or endpoint['capabilities'][:6] == list(caps[:6])


def configure_a2dp(device_path):
    '''As bluetoothd 5.66 does once the A2DP sink profile connects: try the registered source
    endpoints in registration order against the speaker's endpoints (the last used pair
    first), ask each for a configuration (SelectConfiguration) until one answers, make the
    transport, and tell that endpoint (SetConfiguration). Records the outcome under
    STATE[device]['a2dp'].'''
    state = STATE.setdefault(device_path, {})
    seps = remote_seps(state)
    transport = device_path + '/fd0'
    if not seps or transport in mockobject.objects:
        return False
    sources = [e for e in ENDPOINTS if e['uuid'] == A2DP_SOURCE_UUID]
    if not sources:
        state['a2dp'] = 'no source endpoint'
        return False
    candidates = [(e, codec, caps) for e in sources for codec, caps in seps if same_codec(e, codec, caps)]
    last = state.get('last_used')
    candidates.sort(key=lambda c: 0 if (c[0]['path'], c[1]) == last else 1)
    if not candidates:
        state['a2dp'] = 'no matching endpoint'
        return False
    state['a2dp'] = ''
    register_remote_seps(device_path)
    for endpoint, codec, caps in candidates:
        proxy = BUS['connection'].get_object(endpoint['sender'], endpoint['path'], introspect=False)
        try:
            chosen = proxy.SelectConfiguration(dbus.Array(caps, signature='y'), dbus_interface=ENDPOINT_IFACE, timeout=5)
        except dbus.exceptions.DBusException as failure:
            state['a2dp'] = 'SelectConfiguration failed: ' + failure.get_dbus_name()
            state.setdefault('refused', []).append(endpoint['path'])
            continue
        make_transport(device_path, endpoint, codec, [int(b) for b in chosen])
        break
    return False


def make_transport(device_path, endpoint, codec, chosen):
    '''The transport of a configured stream, told to the local endpoint that configured it.'''
    state = STATE.setdefault(device_path, {})
    transport = device_path + '/fd0'
    proxy = BUS['connection'].get_object(endpoint['sender'], endpoint['path'], introspect=False)
    # bluetoothd gives the transport the UUID of the local endpoint that configured it (ours: A2DP Source).
    AddMediaTransport(mockobject.objects['/'], dbus.ObjectPath(device_path), codec, chosen, 64, A2DP_SOURCE_UUID)
    if 'delay' in state:
        mockobject.objects[transport].props[TRANSPORT_IFACE]['Delay'] = dbus.UInt16(state['delay'])
    properties = dict(mockobject.objects[transport].props[TRANSPORT_IFACE])
    try:
        proxy.SetConfiguration(dbus.ObjectPath(transport), dbus.Dictionary(properties, signature='sv'), dbus_interface=ENDPOINT_IFACE, timeout=5)
        state['a2dp'] = 'configured'
        state['last_used'] = (endpoint['path'], codec)
        state['endpoint'] = endpoint
    except dbus.exceptions.DBusException as failure:
        state['a2dp'] = 'SetConfiguration failed: ' + failure.get_dbus_name()
        remove_object(transport, [TRANSPORT_IFACE])
    state['a2dp_configuration'] = chosen


def register_remote_seps(device_path):
    '''As bluetoothd 5.52 and later after discovering the speaker's stream endpoints: one
    org.bluez.MediaEndpoint1 object each (sepN below the device), whose SetConfiguration
    sets the stream up again with a local endpoint and a configuration (a codec switch).'''
    state = STATE.setdefault(device_path, {})
    for index, (codec, caps) in enumerate(remote_seps(state)):
        path = '%s/sep%d' % (device_path, index + 1)
        if path in mockobject.objects:
            continue
        mock = mockobject.objects['/']
        mock.AddObject(path, ENDPOINT_IFACE, {
            'UUID': A2DP_SINK_UUID, 'Codec': dbus.Byte(codec), 'Capabilities': dbus.Array(caps, signature='y'),
            'Device': dbus.ObjectPath(device_path), 'DelayReporting': dbus.Boolean(True),
        }, [
            ('SetConfiguration', 'oa{sv}', '', lambda obj, endpoint, properties, device_path=device_path, index=index:
                remote_set_configuration(device_path, index, endpoint, properties)),
        ])
        interfaces_added(path, ENDPOINT_IFACE, mockobject.objects[path].props[ENDPOINT_IFACE])


def remote_set_configuration(device_path, index, endpoint_path, properties):
    state = STATE.setdefault(device_path, {})
    seps = remote_seps(state)
    if index >= len(seps):
        raise error('InvalidArguments', 'no such endpoint')
    codec, caps = seps[index]
    endpoint = next((e for e in ENDPOINTS if e['path'] == str(endpoint_path) and e['uuid'] == A2DP_SOURCE_UUID and same_codec(e, codec, caps)), None)
    if endpoint is None or 'Capabilities' not in properties:
        raise error('InvalidArguments', 'Invalid arguments in method call')
    state.setdefault('reconfigurations', []).append(str(endpoint_path))
    # As bluetoothd's a2dp_reconfig: the stream open now is closed, then the new one configured.
    ours = state.pop('transport_packets_socket', None)
    if ours is not None:
        ours.close()
    clear_a2dp(device_path)
    make_transport(device_path, endpoint, codec, [int(b) for b in properties['Capabilities']])


def clear_a2dp(device_path):
    transport = device_path + '/fd0'
    if transport not in mockobject.objects or not remote_seps(STATE.get(device_path, {})):
        return
    for endpoint in ENDPOINTS:
        if endpoint['uuid'] == A2DP_SOURCE_UUID and endpoint is STATE.get(device_path, {}).get('endpoint'):
            proxy = BUS['connection'].get_object(endpoint['sender'], endpoint['path'], introspect=False)
            try:
                proxy.ClearConfiguration(dbus.ObjectPath(transport), dbus_interface=ENDPOINT_IFACE, timeout=5)
            except dbus.exceptions.DBusException:
                pass
    remove_object(transport, [TRANSPORT_IFACE])


def ConnectProfile(device, uuid):
    state = STATE.setdefault(device.path, {})
    state.setdefault('profiles', []).append(str(uuid).lower())
    if str(uuid).lower() == A2DP_SINK_UUID:
        delay = state.get('configure_after_ms')
        if delay is not None:
            # A speaker that opens the stream itself a moment after the profile connected.
            GLib.timeout_add(delay, lambda: configure_a2dp(device.path))
            return
        # As bluetoothd: the stream is configured before the profile counts as connected.
        configure_a2dp(device.path)


def SetSinkCapabilities(self, path, capabilities):
    '''Makes the device a Classic A2DP sink with these SBC capabilities.'''
    STATE.setdefault(str(path), {})['sink_caps'] = [int(b) for b in capabilities]


def SetSinkEndpoints(self, path, endpoints):
    '''Makes the device a Classic A2DP sink with these stream endpoints: (codec byte, capabilities).'''
    STATE.setdefault(str(path), {})['sink_seps'] = [(int(codec), [int(b) for b in caps]) for codec, caps in endpoints]
    # bluetoothd learns the new endpoints at the next discovery.
    for sep in [p for p in list(mockobject.objects) if p.startswith(str(path) + '/sep')]:
        remove_object(sep, [ENDPOINT_IFACE])


def SetConfigureAfter(self, path, milliseconds):
    '''The speaker configures its stream this long after ConnectProfile returned.'''
    STATE.setdefault(str(path), {})['configure_after_ms'] = int(milliseconds)


def SpeakerOpensStream(self, path):
    '''The speaker connects A2DP itself (an incoming AVDTP connection, no ConnectProfile).'''
    configure_a2dp(str(path))


def SpeakerSetsStreamUpAgain(self, path, open_after_ms):
    '''The speaker closes the stream and sets it up again itself, as bumble's sink does in the HIL
    rig: AVDTP CLOSE, then SET CONFIGURATION on the same endpoint with the same configuration
    (bluetoothd makes the new transport then) and OPEN open_after_ms later; until then Acquire
    on the new transport answers NotAuthorized.'''
    device_path = str(path)
    state = STATE.setdefault(device_path, {})
    endpoint, chosen = state.get('endpoint'), list(state.get('a2dp_configuration', []))
    if endpoint is None:
        raise error('NotConnected', 'no stream to set up again')
    ours = state.pop('transport_packets_socket', None)
    if ours is not None:
        ours.close()
    clear_a2dp(device_path)
    state['opens_at'] = time.monotonic() + int(open_after_ms) / 1000
    make_transport(device_path, endpoint, endpoint['codec'], [int(b) for b in chosen])


def SpeakerStallsReading(self, path, stalled):
    '''A congested link: the speaker's side stops taking packets (they queue in the socket, then
    the socket refuses more) until it is told to read again.'''
    state = STATE.setdefault(str(path), {})
    state['stalled'] = bool(stalled)
    key = 'transport_packets'
    ours = state.get(key + '_socket')
    if stalled and state.get(key + '_watch'):
        GLib.source_remove(state.pop(key + '_watch'))
    elif not stalled and ours is not None and not state.get(key + '_watch'):
        state[key + '_watch'] = GLib.io_add_watch(ours.fileno(), GLib.IO_IN | GLib.IO_HUP, state[key + '_reader'])


def SpeakerReportsDelay(self, path, delay):
    '''The speaker's AVDTP Delay Report (1/10 ms): on its transport's Delay, as bluetoothd puts it.'''
    state = STATE.setdefault(str(path), {})
    state['delay'] = int(delay)
    transport = str(path) + '/fd0'
    if transport in mockobject.objects:
        set_props(transport, TRANSPORT_IFACE, {'Delay': dbus.UInt16(delay, variant_level=1)})


def A2DPState(self, path):
    state = STATE.get(str(path), {})
    return (dbus.String(state.get('a2dp', '')), dbus.Array(state.get('a2dp_configuration', []), signature='y'),
            dbus.Array(state.get('profiles', []), signature='s'))


def Endpoints(self):
    return dbus.Array([dbus.Struct((e['sender'], e['path'], e['uuid'], dbus.Byte(e['codec']), dbus.Array(e['capabilities'], signature='y')),
                                   signature='sosyay') for e in ENDPOINTS], signature='(sosyay)')


# --- control methods -------------------------------------------------------

def AddAdapter(self, name, address):
    path = '/org/bluez/' + name
    self.AddObject(path, ADAPTER_IFACE, {
        'Address': address, 'AddressType': 'public', 'Name': 'mock-' + name, 'Alias': 'mock-' + name, 'Class': dbus.UInt32(0),
        'Powered': True, 'Discoverable': False, 'Pairable': True, 'Discovering': False,
        'UUIDs': dbus.Array([], signature='s'), 'Roles': dbus.Array(['central', 'peripheral'], signature='s'),
        'Modalias': 'usb:v1D6Bp0246d0537',
    }, [
        ('StartDiscovery', '', '', StartDiscovery),
        ('StopDiscovery', '', '', StopDiscovery),
        ('SetDiscoveryFilter', 'a{sv}', '', SetDiscoveryFilter),
        ('RemoveDevice', 'o', '', RemoveDevice),
        ('GetDiscoveryFilters', '', 'as', lambda self: ['UUIDs', 'RSSI', 'Transport', 'DuplicateData']),
    ])
    mockobject.objects[path].AddMethods(MEDIA_IFACE, [
        ('RegisterEndpoint', 'oa{sv}', '', RegisterEndpoint),
        ('UnregisterEndpoint', 'o', '', UnregisterEndpoint),
    ])
    interfaces_added(path, ADAPTER_IFACE, mockobject.objects[path].props[ADAPTER_IFACE])
    return path


def device_props(adapter_path, address, name, uuids, rssi):
    return {
        'Address': address, 'AddressType': 'random', 'Name': name, 'Alias': name, 'Adapter': dbus.ObjectPath(adapter_path),
        'Paired': False, 'Bonded': False, 'Trusted': False, 'Blocked': False, 'Connected': False, 'ServicesResolved': False,
        'LegacyPairing': False, 'UUIDs': dbus.Array(uuids, signature='s'), 'RSSI': dbus.Int16(rssi),
        'ManufacturerData': dbus.Dictionary({dbus.UInt16(0x004C): dbus.Array([1, 2], signature='y', variant_level=1)}, signature='qv'),
        'ServiceData': dbus.Dictionary({}, signature='sv'),
        'AdvertisingFlags': dbus.Array([6], signature='y'),
    }


def AddDevice(self, adapter_name, address, name, uuids, rssi):
    adapter_path = '/org/bluez/' + adapter_name
    path = adapter_path + '/dev_' + address.replace(':', '_')
    self.AddObject(path, DEVICE_IFACE, device_props(adapter_path, address, name, list(uuids), rssi), [
        ('Connect', '', '', Connect),
        ('Disconnect', '', '', Disconnect),
        ('Pair', '', '', Pair),
        ('CancelPairing', '', '', CancelPairing),
        ('ConnectProfile', 's', '', ConnectProfile),
    ])
    interfaces_added(path, DEVICE_IFACE, mockobject.objects[path].props[DEVICE_IFACE])
    return path


def AddDevices(self, adapter_name, count, uuid):
    '''Adds `count` devices as fast as dbusmock can; returns the seconds it took.'''
    start = time.monotonic()
    for index in range(count):
        address = '02:00:00:%02X:%02X:%02X' % ((index >> 16) & 0xFF, (index >> 8) & 0xFF, index & 0xFF)
        AddDevice(self, adapter_name, address, 'Speaker %d' % index, [uuid], -50 - (index % 40))
    return time.monotonic() - start


def SetRSSI(self, path, rssi):
    set_props(str(path), DEVICE_IFACE, {'RSSI': dbus.Int16(rssi, variant_level=1)})


def RemoveDevicePath(self, path):
    remove_device(str(path))


def RemoveAdapter(self, name):
    path = '/org/bluez/' + name
    for device in [p for p in list(mockobject.objects) if p.startswith(path + '/')]:
        if device in mockobject.objects:
            remove_object(device, list(mockobject.objects[device].props.keys()))
    remove_object(path, [ADAPTER_IFACE])


def SetAdapterPowered(self, name, powered):
    set_props('/org/bluez/' + name, ADAPTER_IFACE, {'Powered': dbus.Boolean(powered, variant_level=1)})


def SetConnectScript(self, path, steps):
    STATE.setdefault(str(path), {})['connect'] = [str(s) for s in steps]


def ConnectCalls(self, path):
    return dbus.UInt32(STATE.get(str(path), {}).get('connect_calls', 0))


def SetPairing(self, path, method, code):
    STATE.setdefault(str(path), {})['pairing'] = str(method)
    STATE[str(path)]['code'] = str(code)


def AddVolumeControl(self, path, volume, mute, step):
    state = STATE.setdefault(str(path), {})
    state['vcs'] = {'volume': int(volume), 'mute': bool(mute), 'counter': 0, 'step': int(step)}
    device = mockobject.objects[str(path)]
    if device.props[DEVICE_IFACE]['ServicesResolved']:
        add_gatt(str(path))


def PressVolumeButton(self, path, delta):
    vcs = STATE[str(path)]['vcs']
    vcs['volume'] = max(0, min(255, vcs['volume'] + int(delta)))
    vcs['counter'] = (vcs['counter'] + 1) % 256
    notify(vcs)


def BumpCounter(self, path):
    '''Another client changed the volume: the counter moves on, our copy goes stale.'''
    vcs = STATE[str(path)]['vcs']
    vcs['counter'] = (vcs['counter'] + 1) % 256
    path_state = vcs.get('state_path')
    if path_state:
        mockobject.objects[path_state].props[CHAR_IFACE]['Value'] = dbus.Array(volume_state(vcs), signature='y')


def VolumeState(self, path):
    vcs = STATE[str(path)]['vcs']
    return dbus.Array(volume_state(vcs), signature='y')


def ControlPointWrites(self, path):
    return dbus.Array([dbus.Array(w, signature='y') for w in STATE[str(path)]['vcs'].get('writes', [])], signature='ay')


def AcquiredWrites(self, path):
    return dbus.Array([dbus.Array(w, signature='y') for w in STATE.get(str(path), {}).get('acquired', [])], signature='ay')


def DiscoveryFilters(self, adapter_name):
    filters = STATE.get('/org/bluez/' + adapter_name, {}).get('filters', [])
    return dbus.Array([dbus.Dictionary(f, signature='sv') for f in filters], signature='a{sv}')


def watch_registrations(_bus, message):
    if message.get_interface() == AGENT_MANAGER_IFACE and message.get_member() == 'RegisterAgent':
        AGENT['sender'] = message.get_sender()
    if message.get_interface() == MEDIA_IFACE and message.get_member() == 'RegisterEndpoint':
        PENDING_ENDPOINT_SENDER['sender'] = message.get_sender()
    return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED


def load(mock, _parameters):
    BUS['connection'] = mock.connection
    mock.connection.add_message_filter(watch_registrations)
    mock.AddObject('/org/bluez', AGENT_MANAGER_IFACE, {}, [
        ('RegisterAgent', 'os', '', RegisterAgent),
        ('RequestDefaultAgent', 'o', '', RequestDefaultAgent),
        ('UnregisterAgent', 'o', '', UnregisterAgent),
    ])
    mock.AddMethods(MOCK_IFACE, [
        ('AddAdapter', 'ss', 's', AddAdapter),
        ('AddDevice', 'sssasn', 's', AddDevice),
        ('AddDevices', 'sus', 'd', AddDevices),
        ('SetRSSI', 'on', '', SetRSSI),
        ('RemoveDevicePath', 'o', '', RemoveDevicePath),
        ('RemoveAdapter', 's', '', RemoveAdapter),
        ('SetAdapterPowered', 'sb', '', SetAdapterPowered),
        ('SetConnectScript', 'oas', '', SetConnectScript),
        ('ConnectCalls', 'o', 'u', ConnectCalls),
        ('SetPairing', 'oss', '', SetPairing),
        ('AddVolumeControl', 'oyby', '', AddVolumeControl),
        ('PressVolumeButton', 'on', '', PressVolumeButton),
        ('BumpCounter', 'o', '', BumpCounter),
        ('VolumeState', 'o', 'ay', VolumeState),
        ('ControlPointWrites', 'o', 'aay', ControlPointWrites),
        ('AcquiredWrites', 'o', 'aay', AcquiredWrites),
        ('DiscoveryFilters', 's', 'aa{sv}', DiscoveryFilters),
        ('AddMediaTransport', 'oyayqs', 's', AddMediaTransport),
        ('TransportPackets', 'o', 'aay', TransportPackets),
        ('SpeakerSetsTransportVolume', 'oq', '', SpeakerSetsTransportVolume),
        ('SetSinkCapabilities', 'oay', '', SetSinkCapabilities),
        ('SpeakerSuspends', 'o', '', SpeakerSuspends),
        ('SpeakerDropsAudioProfile', 'o', '', SpeakerDropsAudioProfile),
        ('A2DPState', 'o', 'sayas', A2DPState),
        ('SetSinkEndpoints', 'oa(yay)', '', SetSinkEndpoints),
        ('DelayReportingEndpoints', '', 'ao', lambda self: dbus.Array([dbus.ObjectPath(e['path']) for e in ENDPOINTS if e['delay_reporting']], signature='o')),
        ('SetConfigureAfter', 'ou', '', SetConfigureAfter),
        ('AnotherSourceRegisters', 'sb', '', AnotherSourceRegisters),
        ('SpeakerOpensStream', 'o', '', SpeakerOpensStream),
        ('SpeakerSetsStreamUpAgain', 'ou', '', SpeakerSetsStreamUpAgain),
        ('SpeakerReportsDelay', 'oq', '', SpeakerReportsDelay),
        ('SpeakerStallsReading', 'ob', '', SpeakerStallsReading),
        ('TransportCodec', 'o', 'yay', lambda self, path: (dbus.Byte(mockobject.objects[str(path) + '/fd0'].props[TRANSPORT_IFACE]['Codec']), dbus.Array(mockobject.objects[str(path) + '/fd0'].props[TRANSPORT_IFACE]['Configuration'], signature='y'))),
        ('Endpoints', '', 'a(sosyay)', Endpoints),
        ('SetDeviceClass', 'ou', '', lambda self, path, value: set_props(str(path), DEVICE_IFACE, {'Class': dbus.UInt32(value, variant_level=1)})),
    ])
