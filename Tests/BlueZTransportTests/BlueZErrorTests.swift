import BlueZTransport
import DBus
import Testing

/// BlueZ's answers typed from their D-Bus error names, and the reasons it gives
/// only in the message text parsed once.
@Suite struct BlueZErrorTests {
    @Test func documentedNamesAreTyped() {
        for kind in BlueZError.Kind.allCases where kind != .other {
            #expect(BlueZError(DBusError(name: "org.bluez.Error." + kind.rawValue, message: "")).kind == kind)
        }
        #expect(BlueZError(DBusError(name: "org.bluez.Error.SomethingNew", message: "x")).kind == .other)
        #expect(BlueZError(DBusError(name: DBusError.noReplyName, message: "no reply")).kind == .other)
        #expect(BlueZError(DBusError(name: "org.bluez.ErrorInProgress", message: "")).kind == .other, "the prefix is matched whole")
    }

    @Test func aConnectionFailureReasonIsReadFromFailedOnly() {
        let abort = BlueZError(DBusError(name: "org.bluez.Error.Failed", message: "le-connection-abort-by-local"))
        #expect(abort.connectionFailureReason == "le-connection-abort-by-local" && abort.isLocalConnectionAbort)
        let page = BlueZError(DBusError(name: "org.bluez.Error.Failed", message: "br-connection-page-timeout"))
        #expect(page.connectionFailureReason == "br-connection-page-timeout" && !page.isLocalConnectionAbort)
        let other = BlueZError(DBusError(name: "org.bluez.Error.InProgress", message: "le-connection-abort-by-local"))
        #expect(other.connectionFailureReason == nil && !other.isLocalConnectionAbort)
        #expect(BlueZError(DBusError(name: "org.bluez.Error.Failed", message: "Operation failed")).connectionFailureReason == nil)
        // Found by the ble-volume fuzz harness: a bare prefix is no reason; leading spaces are not part of one.
        #expect(BlueZError(DBusError(name: "org.bluez.Error.Failed", message: "le-connection- x")).connectionFailureReason == nil)
        #expect(BlueZError(DBusError(name: "org.bluez.Error.Failed", message: "  le-connection-abort-by-local")).isLocalConnectionAbort)
    }

    @Test func theATTErrorCodeIsParsedOrNil() {
        #expect(BlueZError(DBusError(name: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x80")).attErrorCode == 0x80)
        #expect(BlueZError(DBusError(name: "org.bluez.Error.Failed", message: "ATT error: 0x0e (Unlikely Error)")).attErrorCode == 0x0E)
        #expect(BlueZError(DBusError(name: "org.bluez.Error.Failed", message: "ATT error: 0x8")).attErrorCode == nil)
        #expect(BlueZError(DBusError(name: "org.bluez.Error.Failed", message: "ATT error: 0xzz")).attErrorCode == nil)
        #expect(BlueZError(DBusError(name: "org.bluez.Error.Failed", message: "Not connected")).attErrorCode == nil)
        #expect(BlueZError(failed: "Acquire: unexpected reply").kind == .failed)
    }
}
