// Custom domain names: each with where its certificate comes from and its
// base path mappings (docs/behaviour.md, "Custom domain names"). They are
// created and changed with the AWS CLI; the private key is never shown.
import { all, path } from "../api.js";
import { h, table, when } from "../dom.js";
import { links } from "../links.js";

/** #/domains: GetDomainNames, GetRestApis (for names) and GetBasePathMappings of each domain. */
export async function list() {
  const [domains, apis] = await Promise.all([all("/domainnames"), all("/restapis")]);
  const apiName = new Map(apis.map((a) => [a.id, a.name]));
  const mappings = await Promise.all(domains.map((d) => all(path`/domainnames/${d.domainName}/basepathmappings`)));
  const rows = domains.map((d, i) => [
    d.domainName,
    certificateText(d),
    mappings[i].length ? mappings[i].map((m, j) => [j ? ", " : "", mappingText(m, apiName)]) : "none",
  ]);
  return {
    title: "Domain names",
    body: [
      h("p", {}, "Custom domain names serve APIs over HTTPS on the gateway's TLS port with their own certificates. Create them, their certificates and their base path mappings with the AWS CLI (create-domain-name, create-base-path-mapping)."),
      table({ caption: "Domain names", columns: ["Domain name", "Certificate", "Base path mappings"], rows, empty: "No custom domain names yet." }),
    ],
  };
}

/** Where a domain's certificate comes from, with its label. */
function certificateText(d) {
  const label = d.regionalCertificateName || d.certificateName;
  const source = d.regionalCertificateArn
    ? ["from the gateway nodes' files: ", h("code", {}, d.regionalCertificateArn)]
    : ["stored, given ", when(d.certificateUploadDate)];
  return label ? [label, " (", source, ")"] : source;
}

/** "/v1 → shop / prod" with links to the API and stage. */
function mappingText(m, apiName) {
  const base = m.basePath === "(none)" ? "/" : "/" + m.basePath;
  const api = h("a", { href: links.api(m.restApiId) }, apiName.get(m.restApiId) || m.restApiId);
  const stage = m.stage ? h("a", { href: links.stage(m.restApiId, m.stage) }, m.stage) : "stage named in the path";
  return [h("code", {}, base), " → ", api, " / ", stage];
}
