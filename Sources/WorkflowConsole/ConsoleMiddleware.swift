import Foundation
import HTTPTypes
import Hummingbird

/// Headers on every answer: the page runs only its own script and style (no inline script: a
/// payload that holds markup cannot run), nothing is cached, and no address (which may carry
/// the token) is sent on as a referrer.
struct ConsoleHeaders: RouterMiddleware {
    typealias Context = BasicRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            response = Response(
                status: .notFound, headers: [.contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"error":{"message":"no such page or endpoint","status":404}}"#)))
        }
        response.headers[.contentSecurityPolicy] =
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.cacheControl] = "no-store"
        response.headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return response
    }
}

/// Lets a request through only with the token: `Authorization: Bearer TOKEN`, `?token=TOKEN`, or
/// the cookie the page's own request left (`SameSite=Strict`: no other site's page sends it).
/// Anything else gets 401, whatever it asks for.
struct TokenCheck: RouterMiddleware {
    typealias Context = BasicRequestContext
    static let cookie = "wfctl_console"
    let token: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let offered = [
            request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil },
            request.uri.queryParameters["token"].map(String.init),
            request.cookies[Self.cookie]?.value,
        ]
        guard offered.contains(where: { $0.map(matches) ?? false }) else {
            return Response(
                status: .unauthorized,
                headers: [.contentType: "application/json; charset=utf-8", .wwwAuthenticate: "Bearer"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"error":{"message":"this console needs its token: open it as /?token=TOKEN, or send Authorization: Bearer TOKEN","status":401}}"#)))
        }
        return try await next(request, context)
    }

    /// Compares in time that depends on the lengths only, not on where the first difference is.
    func matches(_ offered: String) -> Bool {
        let a = Array(offered.utf8), b = Array(token.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
