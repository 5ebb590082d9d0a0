import Foundation
import HeraldTestSupport
import Hummingbird
import NIOCore

/// An OTLP/HTTP traces receiver of the test's own: `POST /v1/traces` bodies
/// (`ExportTraceServiceRequest`, protobuf) decoded into spans with the few fields the tests check.
/// No generated code: swift-otel keeps its OTLP types internal, so the wire format is read here
/// field by field (opentelemetry-proto's trace.proto and common.proto numbers).
final class OTLPCollector: Sendable {
    struct Span: Sendable, Equatable {
        /// The ids in hex; no parent: empty.
        var traceID = "", spanID = "", parentSpanID = ""
        var name = ""
        /// `SpanKind` (1 internal, 2 server, 3 client), and the status code (0 unset, 1 ok, 2 error).
        var kind = 0, status = 0
        /// Every attribute's value as text (strings as they are, numbers and booleans printed).
        var attributes: [String: String] = [:]
    }

    /// Every span received, in arrival order.
    let spans = Recorded<Span>()
    /// Bodies that did not decode (a test expects none).
    let undecodable = Recorded<Int>()

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("v1/traces") { request, _ -> Response in
            let body = Array(try await request.body.collect(upTo: 16 << 20).readableBytesView)
            do {
                self.spans.append(contentsOf: try Self.decode(body))
            } catch {
                self.undecodable.append(contentsOf: [body.count])
                return Response(status: .badRequest)
            }
            // An empty `ExportTraceServiceResponse`: everything accepted.
            return Response(status: .ok, headers: [.contentType: "application/x-protobuf"])
        }
        return router
    }

    /// The spans of an `ExportTraceServiceRequest`: resource_spans (1) → scope_spans (2) → spans (2).
    static func decode(_ body: [UInt8]) throws -> [Span] {
        var spans: [Span] = []
        for resource in try ProtoReader.fields(body[...]) where resource.number == 1 {
            for scope in try ProtoReader.fields(resource.bytes) where scope.number == 2 {
                for span in try ProtoReader.fields(scope.bytes) where span.number == 2 {
                    spans.append(try Self.span(span.bytes))
                }
            }
        }
        return spans
    }

    private static func span(_ bytes: ArraySlice<UInt8>) throws -> Span {
        var span = Span()
        for field in try ProtoReader.fields(bytes) {
            switch field.number {
            case 1: span.traceID = hex(field.bytes)
            case 2: span.spanID = hex(field.bytes)
            case 4: span.parentSpanID = hex(field.bytes)
            case 5: span.name = String(decoding: field.bytes, as: UTF8.self)
            case 6: span.kind = Int(field.varint)
            case 9:
                let (key, value) = try attribute(field.bytes)
                span.attributes[key] = value
            case 15:
                for status in try ProtoReader.fields(field.bytes) where status.number == 3 {
                    span.status = Int(status.varint)
                }
            default: break
            }
        }
        return span
    }

    /// A `KeyValue`: key (1), value (2) an `AnyValue` (string 1, bool 2, int 3, double 4).
    private static func attribute(_ bytes: ArraySlice<UInt8>) throws -> (String, String) {
        var key = ""
        var value = ""
        for field in try ProtoReader.fields(bytes) {
            if field.number == 1 { key = String(decoding: field.bytes, as: UTF8.self) }
            guard field.number == 2 else { continue }
            for any in try ProtoReader.fields(field.bytes) {
                switch any.number {
                case 1: value = String(decoding: any.bytes, as: UTF8.self)
                case 2: value = any.varint == 0 ? "false" : "true"
                case 3: value = String(Int64(bitPattern: any.varint))
                case 4: value = String(Double(bitPattern: any.varint))
                default: value = String(decoding: any.bytes, as: UTF8.self)
                }
            }
        }
        return (key, value)
    }

    private static func hex(_ bytes: ArraySlice<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}

/// The protobuf wire format's fields, one level at a time: varints (0), fixed 64-bit (1),
/// length-delimited (2) and fixed 32-bit (5) values.
enum ProtoReader {
    struct Field {
        var number: Int
        /// A varint's value, or a fixed field's bits.
        var varint: UInt64 = 0
        /// A length-delimited field's bytes.
        var bytes: ArraySlice<UInt8> = []
    }

    struct Malformed: Error {}

    static func fields(_ bytes: ArraySlice<UInt8>) throws -> [Field] {
        var fields: [Field] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let tag = try varint(bytes, &index)
            var field = Field(number: Int(tag >> 3))
            switch tag & 7 {
            case 0: field.varint = try varint(bytes, &index)
            case 1: field.varint = try fixed(bytes, &index, width: 8)
            case 5: field.varint = try fixed(bytes, &index, width: 4)
            case 2:
                let length = Int(try varint(bytes, &index))
                guard length >= 0, bytes.endIndex - index >= length else { throw Malformed() }
                field.bytes = bytes[index..<index + length]
                index += length
            default: throw Malformed()
            }
            fields.append(field)
        }
        return fields
    }

    private static func varint(_ bytes: ArraySlice<UInt8>, _ index: inout Int) throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.endIndex, shift < 64 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        throw Malformed()
    }

    private static func fixed(_ bytes: ArraySlice<UInt8>, _ index: inout Int, width: Int) throws -> UInt64 {
        guard bytes.endIndex - index >= width else { throw Malformed() }
        var value: UInt64 = 0
        for offset in 0..<width { value |= UInt64(bytes[index + offset]) << (8 * UInt64(offset)) }
        index += width
        return value
    }
}
