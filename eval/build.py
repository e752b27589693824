#!/usr/bin/env python3
"""Writes eval/catalog.jsonl, eval/queries.jsonl and eval/groups.json from the *_data.py files.

Usage: python3 eval/build.py   (stdlib only; no network, no model)
"""
import json
import os
import re

from queries_data import QUERIES
from tools_data import TOOLS

HERE = os.path.dirname(os.path.abspath(__file__))

# Keyword groups for the keyword router, one per tag, in seed 002's style:
# a handful of obvious words per domain, in Chinese and English.
GROUP_KEYWORDS = {
    "file_ops": ["文件", "目录", "读", "写", "改", "代码", "函数", "file", "folder", "directory", "read", "write", "edit", "code"],
    "shell": ["命令", "终端", "执行", "进程", "测试", "command", "shell", "terminal", "process", "run", "test"],
    "git_ops": ["提交", "分支", "commit", "branch", "git", "push", "pull"],
    "web": ["网页", "网站", "接口", "请求", "http", "api", "url", "web", "website", "fetch"],
    "memory": ["记住", "记忆", "记得", "忘", "remember", "memory", "recall", "forget"],
    "todo": ["待办", "todo", "to-do"],
    "human": ["问问用户", "ask the user"],
    "config": ["配置", "设置", "模型", "版本", "config", "setting", "model", "version"],
    "routine": ["定时", "提醒", "每天", "每分钟", "倒计时", "schedule", "cron", "remind", "every", "timer"],
    "github": ["github", "issue", "pr", "pull request", "合并请求", "仓库"],
    "gitlab": ["gitlab", "流水线", "pipeline", "merge request"],
    "email": ["邮件", "邮箱", "收件箱", "email", "mail", "inbox", "gmail", "outlook"],
    "calendar": ["日历", "日程", "会议", "开会", "calendar", "meeting", "schedule", "invite", "zoom"],
    "messaging": ["消息", "发消息", "群", "短信", "通知", "slack", "teams", "discord", "telegram", "微信", "钉钉", "飞书", "message", "sms", "text"],
    "crm": ["客户", "商机", "线索", "联系人", "销售", "crm", "deal", "lead", "contact", "customer", "sales"],
    "support": ["工单", "客服", "ticket", "support", "help center"],
    "database": ["数据库", "表", "sql", "索引", "缓存", "database", "table", "query", "index", "redis", "mongo"],
    "cloud": ["云", "服务器", "s3", "aws", "ec2", "lambda", "terraform", "cloud", "server", "bucket"],
    "kubernetes": ["k8s", "pod", "kubernetes", "副本", "扩容", "deployment", "replica"],
    "docker": ["docker", "容器", "镜像", "container", "image"],
    "deploy": ["发布", "上线", "回滚", "部署", "deploy", "release", "rollback", "feature flag"],
    "monitoring": ["告警", "监控", "日志", "值班", "alert", "monitor", "logs", "on call", "incident"],
    "payments": ["支付", "付款", "退款", "发票", "订阅", "payment", "pay", "refund", "invoice", "subscription", "stripe"],
    "finance": ["汇率", "股价", "报销", "预算", "税", "exchange rate", "stock", "expense", "budget", "tax", "bitcoin"],
    "weather": ["天气", "下雨", "气温", "温度", "weather", "rain", "temperature", "forecast"],
    "maps": ["地图", "导航", "怎么走", "附近", "路线", "map", "directions", "near", "route", "traffic"],
    "travel": ["机票", "航班", "酒店", "高铁", "火车", "签证", "flight", "hotel", "train", "visa", "trip"],
    "docs": ["文档", "笔记", "表格", "pdf", "notion", "wiki", "doc", "sheet", "slides", "spreadsheet"],
    "notes": ["笔记", "备忘", "note", "memo"],
    "language": ["翻译", "总结", "语法", "translate", "summarize", "summary", "grammar"],
    "project": ["jira", "任务", "迭代", "工时", "项目", "task", "sprint", "project", "asana", "trello", "linear"],
    "analytics": ["访问量", "流量", "转化", "留存", "报表", "图表", "analytics", "traffic", "conversion", "retention", "chart", "dashboard"],
    "media": ["图片", "照片", "视频", "音频", "音乐", "字幕", "image", "photo", "video", "audio", "music", "picture"],
    "ecommerce": ["订单", "商品", "库存", "快递", "退货", "优惠券", "order", "product", "stock", "shipping", "package", "discount"],
    "hr": ["请假", "年假", "工资", "同事", "面试", "会议室", "leave", "vacation", "payslip", "interview", "employee"],
    "identity": ["账号", "密码", "权限", "account", "password", "permission", "role"],
    "security": ["漏洞", "加密", "密码", "vulnerability", "encrypt", "password", "hash"],
    "utility": ["计算", "换算", "日期", "随机", "calculate", "convert", "date", "random", "json", "base64"],
    "news": ["新闻", "报道", "news", "headline", "article"],
    "knowledge": ["百科", "论文", "wikipedia", "paper"],
    "lifestyle": ["餐厅", "外卖", "菜谱", "电影", "restaurant", "recipe", "movie", "food", "workout"],
    "smarthome": ["灯", "空调", "门锁", "扫地", "lights", "thermostat", "lock", "vacuum"],
    "storage": ["网盘", "上传", "分享", "drive", "dropbox", "onedrive", "upload", "share"],
    "contacts": ["电话", "通讯录", "phone number", "contacts", "address book"],
}


def parameters(spec):
    props, required = {}, []
    for i, part in enumerate(filter(None, spec.split(";"))):
        name, typ, desc = part.split(":", 2)
        props[name] = {"type": typ, "description": desc}
        if typ == "array":
            props[name]["items"] = {"type": "string"}
        if i == 0:
            required.append(name)
    return {"type": "object", "properties": props, "required": required}


def main():
    with open(os.path.join(HERE, "catalog.jsonl"), "w", encoding="utf-8") as f:
        for name, desc, params, tag in TOOLS:
            line = {"name": name, "description": desc, "parameters": parameters(params), "tags": [tag]}
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "queries.jsonl"), "w", encoding="utf-8") as f:
        for i, (query, needed) in enumerate(QUERIES):
            lang = "zh" if re.search("[\u4e00-\u9fff]", query) else "en"
            split = "test" if i % 3 == 2 else "dev"
            line = {"id": f"q{i + 1:03d}", "query": query, "needed": needed, "lang": lang, "split": split}
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    tags = sorted({t[3] for t in TOOLS})
    missing = [t for t in tags if t not in GROUP_KEYWORDS]
    if missing:
        raise SystemExit(f"no keywords for tags {missing}")
    groups = [{"name": t, "keywords": GROUP_KEYWORDS[t], "tags": [t]} for t in tags]
    with open(os.path.join(HERE, "groups.json"), "w", encoding="utf-8") as f:
        json.dump({"groups": groups}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(TOOLS)} tools, {len(QUERIES)} queries, {len(groups)} groups")


if __name__ == "__main__":
    main()
