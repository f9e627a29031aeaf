/**
 * A partner integration's first steps with the client, compiled by npm run
 * check (tsc) so that the generated types keep fitting real calls: sign in,
 * create an organization, add a device, list its events, and read webhook
 * bodies. The lines marked @ts-expect-error must stay type errors.
 */
import { createFleetcamClient, type ApiError, type WebhookMessage } from "./index.js";

/** firstHour signs in at baseUrl and returns the events of a new device. */
export async function firstHour(baseUrl: string, email: string, password: string, imei: string) {
  const anonymous = createFleetcamClient(baseUrl);
  const signin = await anonymous.POST("/v2/authenticate", { body: { email, password } });
  if (signin.error) {
    throw new Error(describeError(signin.error));
  }
  const token = signin.data.data?.token;
  if (token === undefined) {
    throw new Error("no token");
  }
  const c = createFleetcamClient(baseUrl, token);

  const org = await c.POST("/v2/organizations", { body: { name: "Northwind Haulage" } });
  if (org.error) {
    throw new Error(describeError(org.error));
  }
  const orgId: number = org.data.data.organizationId;

  const added = await c.POST("/v2/organizations/{orgId}/devices", {
    params: { path: { orgId } },
    body: { imei, name: "Truck 7" },
  });
  if (added.error) {
    throw new Error(describeError(added.error));
  }
  const status: "online" | "standby" | "offline" = added.data.data.status;

  const events = await c.GET("/v2/devices/{imei}/events", {
    params: { path: { imei }, query: { start: "2026-03-01T00:00:00Z", end: "2026-03-02T00:00:00Z", limit: 100 } },
  });
  if (events.error) {
    throw new Error(describeError(events.error));
  }
  return { status, events: (events.data.data ?? []).map((e) => `${e.id} ${e.eventType} ${e.time}`) };
}

function describeError(e: ApiError): string {
  return `${e.error}: ${e.message} (request ${e.requestId})`;
}

/** describeWebhook tells what a webhook body is about, by its type and message type. */
export function describeWebhook(m: WebhookMessage): string {
  switch (m.type) {
    case "event":
      return `event ${m.data.eventType} of ${m.data.serialNumber}${m.mediaAvailable ? " with its media" : ""}`;
    case "gps":
      return `${m.data.gps.length} GPS samples of ${m.data.serialNumber}`;
    case "alarms":
      return `alarm ${m.data.alarmDefinitionName} ${m.messageType}`;
    case "systemMessages":
      switch (m.messageType) {
        case "deviceStatus":
          return `${m.data.serialNumber} ${m.data.previousStatus} -> ${m.data.status}`;
        case "privacyMode":
          return `privacy ${m.data.change} on ${m.data.serialNumber}`;
        default:
          return `${m.messageType} of ${m.data.serialNumber}`;
      }
    case "activation":
      return m.messageType === "deviceActivation" ? `${m.data.serialNumber} activated` : `camera ${m.data.cameraId} ${m.data.status}`;
  }
}

/** Calls the document does not allow; tsc fails if one of them compiles. */
export async function refused(baseUrl: string) {
  const c = createFleetcamClient(baseUrl);
  // @ts-expect-error a sign-in needs a password
  await c.POST("/v2/authenticate", { body: { email: "ops@fleet.example" } });
  // @ts-expect-error no such route
  await c.GET("/v2/no-such-route");
  // @ts-expect-error orgId is a number
  await c.GET("/v2/organizations/{orgId}", { params: { path: { orgId: "7" } } });
  // @ts-expect-error GET /v2/devices/{imei}/events requires start and end
  await c.GET("/v2/devices/{imei}/events", { params: { path: { imei: "356000000000018" }, query: {} } });
}
