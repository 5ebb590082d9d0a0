/// A message sent over a device's live channel: the message as `GET /v1/messages/{id}` answers
/// it, in the same fields, so the app reads one shape whichever way the message came.
public typealias LiveMessage = MessageView
