import NIOCore
import PostgresNIO

/// A one-dimensional array parameter whose elements may be NULL.
///
/// postgres-nio encodes `[T]` but not `[T?]`; the binary array format has room for NULL elements
/// (a length of -1), so a column that may be NULL can go as one array of fixed type, and a
/// statement with one row or a hundred keeps one shape, which lets it be prepared.
struct NullableArray<Element: PostgresArrayEncodable & PostgresNonThrowingEncodable>: PostgresNonThrowingEncodable {
    var elements: [Element?]

    init(_ elements: [Element?]) {
        self.elements = elements
    }

    static var psqlType: PostgresDataType { Element.psqlArrayType }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(
        into buffer: inout ByteBuffer,
        context: PostgresEncodingContext<JSONEncoder>
    ) {
        // The array header: dimensions, whether any element is NULL, the element type.
        buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(elements.contains { $0 == nil } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue)
        guard !elements.isEmpty else { return }
        // The one dimension: its length and lower bound.
        buffer.writeInteger(Int32(elements.count))
        buffer.writeInteger(1, as: Int32.self)
        for element in elements {
            guard let element else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            // Each element: its length in bytes, then its bytes.
            let lengthIndex = buffer.writerIndex
            buffer.writeInteger(0, as: Int32.self)
            let start = buffer.writerIndex
            element.encode(into: &buffer, context: context)
            buffer.setInteger(Int32(buffer.writerIndex - start), at: lengthIndex)
        }
    }
}
