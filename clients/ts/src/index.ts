/**
 * The TypeScript client of the fleetcam /v2 API: openapi-fetch over the
 * types openapi-typescript generates from the OpenAPI document the server
 * serves (src/schema.d.ts from ../openapi.json; make openapi-client
 * regenerates both).
 */
import createClient, { type Client } from "openapi-fetch";
import type { components, paths, webhooks } from "./schema.js";

export type { components, paths, webhooks };

/** A client of the API: GET, POST, PUT, PATCH and DELETE typed by path. */
export type FleetcamClient = Client<paths>;

/** The JSON body of every webhook delivery, for receivers. */
export type WebhookMessage = components["schemas"]["WebhookMessage"];

/** The body of every error answer: the error name, a message and the request id. */
export type ApiError = components["schemas"]["Error"];

/**
 * createFleetcamClient makes a client of the fleetcam at baseUrl (such as
 * https://fleetcam.example.com) that sends token, from POST
 * /v2/authenticate or a scoped token, with every request.
 */
export function createFleetcamClient(baseUrl: string, token?: string): FleetcamClient {
  return createClient<paths>({
    baseUrl,
    headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
  });
}
