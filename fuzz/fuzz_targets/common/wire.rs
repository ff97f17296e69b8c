//! What the MySQL-protocol fuzz targets (`mysql_packet`, `mysql_session`)
//! share: packet framing, a login as root with an empty password, and the
//! one-thread tokio runtime a connection is driven on.

use std::sync::OnceLock;

/// `payload` framed as a packet with sequence id `seq`.
pub fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
    let l = (payload.len() as u32).to_le_bytes();
    let mut v = vec![l[0], l[1], l[2], seq];
    v.extend_from_slice(payload);
    v
}

/// A HandshakeResponse41 for root (empty password) on database `db`.
pub fn login(db: &[u8]) -> Vec<u8> {
    // PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | MULTI_STATEMENTS |
    // MULTI_RESULTS | PS_MULTI_RESULTS | CONNECT_WITH_DB
    let caps: u32 = 0x0200 | 0x8000 | 0x0008_0000 | 0x0001_0000 | 0x0002_0000 | 0x0004_0000 | 0x8;
    let mut p = caps.to_le_bytes().to_vec();
    p.extend(65536u32.to_le_bytes());
    p.push(45);
    p.extend([0u8; 23]);
    p.extend(b"root\0");
    p.push(0);
    p.extend(db);
    p.push(0);
    p.extend(b"mysql_native_password\0");
    packet(1, &p)
}

/// The runtime connections are driven on (built once).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}
