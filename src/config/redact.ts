/** A connection string with its password removed, for logs and errors; anything else unchanged. */
export function redactUrl(url: string): string {
  if (!url.includes('@')) return url;
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
}
